// The images a run produces, in the library's layout (one malloc'ed array, each image's
// pixels malloc'ed, released with free_sd_images), and the ESRGAN pass over them.
#pragma once

#include <utility>

#include "cli_params.h"
#include "image/image_io.h"
#include "stable-diffusion.h"

namespace cli {

class ImageList {
  public:
    ImageList() = default;
    ImageList(sd_image_t* images, int count) : images_(images), count_(images ? count : 0) {}
    ~ImageList() { free_sd_images(images_, count_); }
    ImageList(const ImageList&) = delete;
    ImageList& operator=(const ImageList&) = delete;
    ImageList(ImageList&& other) noexcept
        : images_(std::exchange(other.images_, nullptr)), count_(std::exchange(other.count_, 0)) {}
    ImageList& operator=(ImageList&& other) noexcept {
        if (this != &other) {
            free_sd_images(images_, count_);
            images_ = std::exchange(other.images_, nullptr);
            count_ = std::exchange(other.count_, 0);
        }
        return *this;
    }

    // A copy of `image` in the library's layout.
    static ImageList copy_of(const sd::image::Image& image);

    int size() const { return count_; }
    sd_image_t& operator[](int i) { return images_[i]; }
    const sd_image_t& operator[](int i) const { return images_[i]; }

  private:
    sd_image_t* images_ = nullptr;
    int count_ = 0;
};

// A copy of a library image.
sd::image::Image to_image(const sd_image_t& view);

// Runs --upscale-model over every image --upscale-repeats times (nothing without one).
// Returns false, leaving the images as they were, when the upscaler cannot run.
bool upscale_results(const CliParams& params, ImageList& images);

}  // namespace cli
