#include "families/family_table.h"

#include "families/registry.h"
#include "io/component_roles.h"
#include "stable-diffusion.h"

namespace sd {
namespace {

// "`--diffusion-model`, `--llm`, `--vae`" with optional parts in brackets; "`-m`" alone for a
// family whose parts all come in one checkpoint.
std::string files_column(const Family& family) {
    std::string required, optional;
    for (const RoleUse& use : family.roles) {
        std::string& list = use.required ? required : optional;
        if (!list.empty()) list += ", ";
        list += '`';
        list += component_role(use.role).option;
        list += '`';
    }
    if (optional.empty()) return required;
    return required + " [" + optional + "]";
}

std::string defaults_column(const Family& family) {
    if (!family.assemble) return "";
    return std::string(sd_sample_method_name(family.defaults.method)) + " / " +
           sd_scheduler_name(family.defaults.scheduler);
}

}  // namespace

std::string family_table_markdown() {
    std::string out =
        "| family | models | runs | separate files (or one `-m` file holding them) | "
        "default sampler / scheduler |\n"
        "| --- | --- | --- | --- | --- |\n";
    for (const Family* f : families()) {
        const char* cells[] = {f->name, f->models ? f->models : "",
                               f->assemble ? "yes" : "recognised, not built yet"};
        out += "|";
        for (const char* cell : cells) {
            out += ' ';
            out += cell;
            out += " |";
        }
        out += ' ';
        out += files_column(*f);
        out += " | ";
        out += defaults_column(*f);
        out += " |\n";
    }
    return out;
}

}  // namespace sd
