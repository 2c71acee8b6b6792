#include "save_results.h"

#include <filesystem>

#include "base/error.h"
#include "image/video_writer.h"
#include "image_metadata.h"
#include "log_output.h"
#include "output_paths.h"

namespace cli {
namespace {

void make_parent_folder(const std::string& path) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (parent.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec)
        sd::fail("cannot create the folder '%s': %s", parent.string().c_str(),
                 ec.message().c_str());
}

bool write_one(const CliParams& p, const GenerationRequest& r, const sd_image_t& view, int index,
               const std::string& path) {
    try {
        const int64_t seed = p.mode == Mode::VidGen ? r.seed : sd_batch_image_seed(r.seed, index);
        const std::string parameters = p.embed_image_metadata ? image_parameters(p, r, seed) : "";
        make_parent_folder(path);
        sd::image::write_image(path, to_image(view), parameters, 90);
        log_info("save result image %d to '%s' (success)", index, path.c_str());
        return true;
    } catch (const std::exception& e) {
        log_error("save result image %d to '%s' failed: %s", index, path.c_str(), e.what());
        return false;
    }
}

// A video's frames as one file, as the reference: an animated WebP for a .webp path, a WebM
// for .webm, else an MJPEG AVI with the extension made .avi.
bool write_video_file(const CliParams& p, const ImageList& images) {
    std::string path = p.output_path;
    if (sd::image::video_format_from_path(path) == sd::image::VideoFormat::MjpegAvi) {
        const std::filesystem::path as_path(path);
        if (as_path.extension() != ".avi")
            path = std::filesystem::path(as_path).replace_extension(".avi").string();
    }
    try {
        std::vector<sd::image::Image> frames;
        for (int i = 0; i < images.size(); ++i) frames.push_back(to_image(images[i]));
        make_parent_folder(path);
        sd::image::write_video(path, frames, p.fps);
        log_info("save the %d-frame video (%d fps) to '%s' (success)", images.size(), p.fps,
                 path.c_str());
        return true;
    } catch (const std::exception& e) {
        log_error("save the video to '%s' failed: %s", path.c_str(), e.what());
        return false;
    }
}

}  // namespace

bool save_results(const CliParams& p, const GenerationRequest& r, const ImageList& images) {
    if (images.size() == 0) return false;
    // A video without a %d in -o is one file; with one, a file a frame.
    if (p.mode == Mode::VidGen && images.size() > 1 && !has_sequence_specifier(p.output_path))
        return write_video_file(p, images);
    const std::vector<std::string> paths =
        output_paths(p.output_path, images.size(), p.output_begin_idx);
    int written = 0;
    for (int i = 0; i < images.size(); ++i) {
        if (!images[i].data) continue;
        if (write_one(p, r, images[i], i, paths[static_cast<size_t>(i)])) ++written;
    }
    log_info("%d/%d images saved", written, images.size());
    return written > 0;
}

}  // namespace cli
