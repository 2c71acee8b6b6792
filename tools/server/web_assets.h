// The web page's files, compiled into the binary at build time from tools/server/web/
// (embed_web.cmake writes web_assets.cpp), so the page needs no file or CDN at run time.
#pragma once

#include <cstddef>

namespace server {

struct WebAsset {
    const char* path;  // "/index.html", "/app.js", "/style.css"
    const char* mime_type;
    const unsigned char* data;
    size_t size;
};

extern const WebAsset kWebAssets[];
extern const size_t kWebAssetCount;

}  // namespace server
