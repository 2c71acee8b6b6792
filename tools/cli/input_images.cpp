#include "input_images.h"

#include <algorithm>
#include <filesystem>

#include "base/error.h"
#include "cli_options.h"
#include "image/image_resize.h"
#include "log_output.h"

namespace fs = std::filesystem;

namespace cli {
namespace {

using sd::image::Image;

bool size_given(const CliParams& p) {
    return p.width > 0 && p.height > 0;
}

// The file of an image option; one that cannot be read is named with its option.
Image read_option_image(const char* option, const std::string& path, int channels) {
    try {
        return sd::image::read_image(path, channels);
    } catch (const sd::Error& e) {
        sd::fail("%s: %s", option, e.what());
    }
}

// Reads `path`; the first image read sets the size when none was given. The library fits
// an image of another size to the generation's (pipeline/generate.h, settle_request).
Image read_sizing(const CliParams& p, const char* option, const std::string& path,
                  bool* size_from_image, GenerationRequest& r) {
    Image image = read_option_image(option, path, 3);
    if (!size_given(p) && !*size_from_image) {
        r.width = static_cast<int>(image.width);
        r.height = static_cast<int>(image.height);
        *size_from_image = true;
        log_info("set width x height to %d x %d from '%s'", r.width, r.height, path.c_str());
    }
    return image;
}

Image read_fitted(const char* option, const std::string& path, int channels,
                  const GenerationRequest& r) {
    Image image = read_option_image(option, path, channels);
    return sd::image::fit(image, static_cast<uint32_t>(r.width), static_cast<uint32_t>(r.height));
}

// Image files of a folder in file name order, at most `limit` (0: all).
std::vector<std::string> image_files(const std::string& dir, const std::string& option,
                                     size_t limit) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw UsageError(option + ": '" + dir + "' is not a folder");
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (!entry.is_regular_file()) continue;
        if (sd::image::format_from_path(entry.path().string()) != sd::image::Format::Unknown)
            files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    if (limit > 0 && files.size() > limit) files.resize(limit);
    return files;
}

}  // namespace

void load_input_images(const CliParams& p, GenerationRequest& r) {
    bool size_from_image = false;
    if (!p.init_image_path.empty())
        r.init_image = read_sizing(p, "--init-img", p.init_image_path, &size_from_image, r);
    if (!p.end_image_path.empty())
        r.end_image = read_sizing(p, "--end-img", p.end_image_path, &size_from_image, r);
    for (const std::string& path : p.ref_image_paths)
        r.ref_images.push_back(read_sizing(p, "--ref-image", path, &size_from_image, r));
    // No mask repaints everything; the library fits the mask and control image.
    if (!p.mask_image_path.empty())
        r.mask_image = read_option_image("--mask", p.mask_image_path, 1);
    if (!p.control_image_path.empty())
        r.control_image = read_option_image("--control-image", p.control_image_path, 3);
    if (!p.control_video_path.empty()) {
        for (const std::string& file :
             image_files(p.control_video_path, "--control-video",
                         static_cast<size_t>(std::max(p.video_frames, 0))))
            r.control_frames.push_back(read_fitted("--control-video", file, 3, r));
    }
    if (!p.pm_id_images_dir.empty()) {
        for (const std::string& file : image_files(p.pm_id_images_dir, "--pm-id-images-dir", 0))
            r.pm_id_images.push_back(read_option_image("--pm-id-images-dir", file, 3));
    }
}

}  // namespace cli
