// The C API's preview callback (sd_set_preview_callback) as the generation loop's LatentTap:
// each tapped latent is rendered (proj / tae / vae) and handed to the user's callback.
#pragma once

#include "pipeline/generate.h"

namespace sd::api {

// The tap for the current preview settings; an empty tap when no callback or mode is set, or
// when the mode cannot preview this model (logged once: "TAE not found for preview", as
// the reference, becomes a named warning). The codecs must outlive the generation. A video's
// previews hand the callback every frame (proj: one a latent frame).
LatentTap preview_tap(const ModelComponents& model, const LatentCodec* tae, const LatentCodec* vae,
                      const VaeTiling& tiling, bool video = false);

}  // namespace sd::api
