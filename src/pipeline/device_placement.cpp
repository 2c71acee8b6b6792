#include "pipeline/device_placement.h"

#include <algorithm>
#include <map>
#include <memory>

#include "base/log.h"
#include "base/strfmt.h"
#include "gpu/device_tensor.h"

namespace sd {
namespace {

// What one call cost on the device: the stream's counters since the call began.
class CallCost {
  public:
    explicit CallCost(const gpu::Stream& s) : stream_(s), start_(gpu::stream_stats(s)) {}
    void log(const char* what) const {
        const gpu::StreamStats now = gpu::stream_stats(stream_);
        SD_LOG_DEBUG(
            "%s on %s: %lld submissions, %lld dispatches, %lld bytes up (%lld of "
            "weights and host constants), %lld bytes down; %lld bytes of device memory held",
            what, gpu::stream_device_name(stream_).c_str(),
            (long long)(now.submissions - start_.submissions),
            (long long)(now.dispatches - start_.dispatches),
            (long long)(now.bytes_uploaded - start_.bytes_uploaded),
            (long long)(now.weight_bytes_uploaded - start_.weight_bytes_uploaded),
            (long long)(now.bytes_downloaded - start_.bytes_downloaded),
            (long long)now.device_bytes);
    }

  private:
    const gpu::Stream& stream_;
    gpu::StreamStats start_;
};

Tensor moved(const Tensor& t, gpu::Stream& s) {
    return t.defined() ? gpu::to_device(t, s) : t;
}

// The conditioning's tensors on the stream's device.
Conditioning moved(const Conditioning& c, gpu::Stream& s) {
    Conditioning on_device = c;
    for (Tensor* t : {&on_device.context, &on_device.vector, &on_device.context_mask,
                      &on_device.image_states, &on_device.control_video})
        *t = moved(*t, s);
    for (Tensor& r : on_device.ref_latents) r = moved(r, s);
    return on_device;
}

// compute() on the stream; after an error part way (out of device memory, a lost device, a
// cancellation) the stream is settled (gpu::settle) and the error propagates.
template <class F>
auto on_stream(gpu::Stream& s, const char* what, F compute) {
    const CallCost cost(s);
    try {
        auto out = compute();
        cost.log(what);
        return out;
    } catch (...) {
        gpu::settle(s);
        throw;
    }
}

class DeviceDiffusionModel final : public DiffusionModel {
  public:
    DeviceDiffusionModel(std::unique_ptr<DiffusionModel> model, std::shared_ptr<gpu::Stream> s)
        : model_(std::move(model)), stream_(std::move(s)) {}

    Tensor forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                   const ControlSignal* control) const override {
        gpu::Stream& s = *stream_;
        return on_stream(s, "diffusion model call", [&] {
            const Conditioning on_device = moved(c, s);
            ControlSignal residuals;
            if (control) {
                residuals.strength = control->strength;
                for (const Tensor& r : control->residuals)
                    residuals.residuals.push_back(moved(r, s));
            }
            // The timesteps stay on the host: their sinusoidal embedding and its small MLP run
            // there, exactly as on the CPU, and join the device activations as an upload.
            const Tensor y =
                model_->forward(moved(x, s), timesteps, on_device, control ? &residuals : nullptr);
            return gpu::to_host(y);
        });
    }
    int64_t in_channels() const override { return model_->in_channels(); }
    int64_t down_factor() const override { return model_->down_factor(); }
    void release_weights() const override { model_->release_weights(); }
    size_t weight_bytes() const override { return model_->weight_bytes(); }
    bool can_skip_layers() const override { return model_->can_skip_layers(); }
    CacheTarget cache_target() const override { return model_->cache_target(); }
    const DiffusionModel& unplaced() const override { return *model_; }
    bool on_device() const override { return true; }

  private:
    std::unique_ptr<DiffusionModel> model_;
    std::shared_ptr<gpu::Stream> stream_;
};

class DeviceLatentCodec final : public LatentCodec {
  public:
    DeviceLatentCodec(std::unique_ptr<LatentCodec> codec, std::shared_ptr<gpu::Stream> s)
        : codec_(std::move(codec)), stream_(std::move(s)) {}

    Tensor encode(const Tensor& image01, Rng& rng) const override {
        return on_stream(*stream_, "VAE encode", [&] {
            return gpu::to_host(codec_->encode(moved(image01, *stream_), rng));
        });
    }
    Tensor decode(const Tensor& latent, const VaeTiling& tiling) const override {
        return on_stream(*stream_, "VAE decode", [&] {
            return gpu::to_host(codec_->decode(moved(latent, *stream_), tiling));
        });
    }
    bool has_encoder() const override { return codec_->has_encoder(); }
    void release_weights() const override { codec_->release_weights(); }
    size_t weight_bytes() const override { return codec_->weight_bytes(); }
    int64_t image_channels() const override { return codec_->image_channels(); }
    bool on_device() const override { return true; }

  private:
    std::unique_ptr<LatentCodec> codec_;
    std::shared_ptr<gpu::Stream> stream_;
};

// A ControlNet on a device: the hint is encoded there once a generation and comes back; each
// call's residuals come back together (one submission) for the diffusion model, which moves
// them to its own device.
class DeviceControlModel final : public ControlModel {
  public:
    DeviceControlModel(std::unique_ptr<ControlModel> model, std::shared_ptr<gpu::Stream> s)
        : model_(std::move(model)), stream_(std::move(s)) {}

    Tensor encode_hint(const Tensor& image01) const override {
        return on_stream(*stream_, "ControlNet hint", [&] {
            return gpu::to_host(model_->encode_hint(moved(image01, *stream_)));
        });
    }
    std::vector<Tensor> forward(const Tensor& x, const Tensor& timesteps, const Conditioning& c,
                                const Tensor& hint) const override {
        gpu::Stream& s = *stream_;
        return on_stream(s, "ControlNet call", [&] {
            return gpu::to_host(
                model_->forward(moved(x, s), timesteps, moved(c, s), moved(hint, s)));
        });
    }
    void release_weights() const override { model_->release_weights(); }
    size_t weight_bytes() const override { return model_->weight_bytes(); }
    bool on_device() const override { return true; }

  private:
    std::unique_ptr<ControlModel> model_;
    std::shared_ptr<gpu::Stream> stream_;
};

}  // namespace

std::unique_ptr<ControlModel> placed_control_model(const ModelComponents& m,
                                                   std::unique_ptr<ControlModel> control) {
    if (!m.control_stream || !control) return control;
    SD_LOG_INFO("ControlNet on %s", gpu::stream_device_name(*m.control_stream).c_str());
    return std::make_unique<DeviceControlModel>(std::move(control), m.control_stream);
}

std::unique_ptr<LatentCodec> placed_like_the_codec(const ModelComponents& m,
                                                   std::unique_ptr<LatentCodec> codec) {
    if (!m.codec_stream || !codec) return codec;
    return std::make_unique<DeviceLatentCodec>(std::move(codec), m.codec_stream);
}

Tensor run_on_stream(gpu::Stream& s, const char* what, const Tensor& input,
                     const std::function<Tensor(const Tensor&)>& network) {
    return on_stream(s, what, [&] { return gpu::to_host(network(moved(input, s))); });
}

DevicePlacement fit_to_devices(const std::vector<gpu::DeviceInfo>& devices,
                               const DevicePlacement& asked, uint64_t diffusion_bytes,
                               uint64_t vae_bytes, std::string& why) {
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    DevicePlacement out = asked;
    out.auto_fit = false;
    // What a device can take: its free memory where it reports it (VK_EXT_memory_budget),
    // else its device-local heaps' size.
    auto available = [](const gpu::DeviceInfo& d) {
        return d.free_bytes ? std::min(*d.free_bytes, d.device_local_bytes) : d.device_local_bytes;
    };
    const gpu::DeviceInfo* best = nullptr;
    for (const gpu::DeviceInfo& d : devices)
        if (!d.cpu && (!best || available(d) > available(*best))) best = &d;
    if (!best) {
        why = devices.empty() ? "auto-fit: no Vulkan device; the models run on the CPU"
                              : "auto-fit: no GPU (" + devices.front().name +
                                    " is a CPU device); the models run on the CPU";
        return out;
    }
    const uint64_t memory = available(*best);
    const uint64_t reserve = std::max<uint64_t>(uint64_t{1} << 30, memory / 10);
    uint64_t usable = memory > reserve ? memory - reserve : 0;
    if (asked.weight_budget > 0) usable = std::min(usable, asked.weight_budget);
    const std::string sizes = strfmt("diffusion model %.1f GiB, VAE %.1f GiB; %s has %.1f GiB%s",
                                     diffusion_bytes / kGiB, vae_bytes / kGiB, best->name.c_str(),
                                     memory / kGiB, best->free_bytes ? " free" : "");
    if (usable < (uint64_t{256} << 20)) {
        why = "auto-fit: " + sizes + ", too little to spare; the models run on the CPU";
        return out;
    }
    out.diffusion = best->name;
    if (!asked.vae_on_cpu && diffusion_bytes + vae_bytes <= usable) {
        out.vae = best->name;
        why = "auto-fit: diffusion model and VAE on " + best->name + " (" + sizes + ")";
    } else if (diffusion_bytes <= usable) {
        why = "auto-fit: diffusion model on " + best->name + ", VAE on the CPU (" + sizes + ")";
    } else {
        out.weight_budget = usable;
        why = strfmt(
            "auto-fit: diffusion model on %s with %.1f GiB of its weights kept there "
            "and the rest uploaded per use, VAE on the CPU (%s)",
            best->name.c_str(), usable / kGiB, sizes.c_str());
    }
    return out;
}

void place_on_devices(ModelComponents& m, const DevicePlacement& asked) {
    DevicePlacement placement = asked;
    if (asked.auto_fit && asked.diffusion.empty() && asked.vae.empty() && m.diffusion) {
        std::string why;
        placement =
            fit_to_devices(gpu::vulkan_devices_with_free_memory().devices, asked,
                           m.diffusion->weight_bytes(), m.codec ? m.codec->weight_bytes() : 0, why);
        if (placement.diffusion.empty())
            SD_LOG_DEBUG("%s", why.c_str());
        else
            SD_LOG_INFO("%s", why.c_str());
    }
    std::map<std::string, std::shared_ptr<gpu::Stream>> streams;  // one a device
    auto stream = [&](const std::string& device) {
        auto& s = streams[device];
        if (!s) {
            gpu::StreamOptions options;
            options.weight_budget = placement.weight_budget;
            s = gpu::open_stream(device, options);
        }
        return s;
    };
    if (!placement.diffusion.empty()) {
        for (std::unique_ptr<DiffusionModel>* d : {&m.diffusion, &m.high_noise_diffusion}) {
            if (*d)
                *d = std::make_unique<DeviceDiffusionModel>(std::move(*d),
                                                            stream(placement.diffusion));
        }
        SD_LOG_INFO("diffusion model on %s", placement.diffusion.c_str());
    }
    if (!placement.vae.empty() && m.codec) {
        m.codec_stream = stream(placement.vae);
        m.codec = std::make_unique<DeviceLatentCodec>(std::move(m.codec), m.codec_stream);
        SD_LOG_INFO("VAE on %s", placement.vae.c_str());
    }
    if (!placement.controlnet.empty()) m.control_stream = stream(placement.controlnet);
    for (const auto& [name, s] : streams) m.device_streams.push_back(s);
    if (!streams.empty() && placement.weight_budget > 0)
        SD_LOG_INFO("weights kept on a device: at most %.1f MiB, the rest uploaded per use",
                    static_cast<double>(placement.weight_budget) / (1 << 20));
}

}  // namespace sd
