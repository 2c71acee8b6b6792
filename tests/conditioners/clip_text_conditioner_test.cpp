// The CLIP vocabulary search of the families that load a CLIP text encoder: with no vocabulary
// file anywhere the built-in one is taken, and the places searched name the model file (not
// "no model file given").
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
    ClipTokenizerSearch search = model_tokenizer_search(files, options);
    EXPECT_TRUE(search.use_builtin);
    EXPECT_EQ(find_model_tokenizer(files, options).vocab_size(), 49408u);  // the built-in one
    search.use_builtin = false;  // to see the places searched
    const std::string error = test::error_of([&] { find_clip_tokenizer(search); });
    EXPECT_NE(error.find("GGUF metadata of " + sd15 + ": no tokenizer.ggml.tokens"),
              std::string::npos)
        << error;
    EXPECT_EQ(error.find("no model file given"), std::string::npos) << error;
}

}  // namespace
}  // namespace sd
