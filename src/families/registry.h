// The ordered table of model families: detection tries them in order (the more specific
// layouts first), loading builds the first match's components.
#pragma once

#include <span>

#include "families/family.h"

namespace sd {

std::span<const Family* const> families();

struct DetectedFamily {
    const Family* family = nullptr;  // nullptr: no family matched
    std::string variant;             // "SD 1.x inpaint", ...
    bool runnable() const { return family && family->assemble; }
};

// The family the files hold (family nullptr when none matched).
DetectedFamily detect_family(const ModelFiles& files);

// A loaded model and the family it came from.
struct LoadedModel {
    const Family* family = nullptr;
    ModelComponents components;
};

// Every family's Family::convert_keeps: a conversion applies them all, whatever the files
// hold, as the reference tool does.
std::vector<std::string> convert_keeps();

// Whether a family of the table (built or only recognised) takes the role: a file given for
// a role none takes is refused before anything is loaded.
bool some_family_takes(ModelRole role);

// Detects and assembles. Throws sd::Error naming the families tried when none matches, the
// family when this build cannot run it yet, the option of a file given for a role the family
// does not take (Family::roles), and the option of a required role the files lack.
LoadedModel load_model(const ModelFiles& files, const LoadOptions& options);

}  // namespace sd
