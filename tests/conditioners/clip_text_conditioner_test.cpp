// The CLIP vocabulary search of the families that load a CLIP text encoder: with no vocabulary
// anywhere, the message names the model file as searched (not "no model file given").
#include "conditioners/clip_text_conditioner.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "families/family_test_util.h"
#include "io/io_test_util.h"

namespace sd {
namespace {

TEST(FindModelTokenizer, NamesTheModelFileItSearched) {
    ::unsetenv("SD_TOKENIZER_DIR");
    const std::string sd15 = test::sparse("sd15", "sd15_no_vocabulary");
    ModelFiles files;
    files.add(sd15, ModelRole::Checkpoint);
    LoadOptions options;
    options.tokenizer_dir = testing::TempDir() + "/no_vocabulary_here";
    options.model_path = sd15;
    const std::string error = test::error_of([&] { find_model_tokenizer(files, options); });
    EXPECT_NE(error.find("GGUF metadata of " + sd15 + ": no tokenizer.ggml.tokens"),
              std::string::npos)
        << error;
    EXPECT_EQ(error.find("no model file given"), std::string::npos) << error;
}

}  // namespace
}  // namespace sd
