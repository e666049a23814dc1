// The compiler knows no model: parallel strategies and lowering take units, parameters and module
// classes from the model interface (models/model.h). This scans every source of compiler/,
// comments included (a comment naming a model is where such knowledge starts to creep in), for
// model and model-family names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

// Case-insensitive; short names only as whole words ("vit" is part of "activity").
const std::regex& model_names() {
  static const std::regex r(
      R"(bert|gpt|llama|encoder\.layer|bart|mistral|gemma|falcon|mixtral|\bt5\b|\bvit\b|\bmt5\b|\bopt-\d)",
      std::regex::icase);
  return r;
}

std::vector<std::string> offending_lines(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (std::regex_search(line, model_names())) out.push_back(file.filename().string() + ":" + std::to_string(n) + ": " + line);
  return out;
}

TEST(CompilerModelNames, PatternFindsModelNames) {
  // The scan can fail: each of these lines must be caught.
  for (const char* s : {"if (u.name.rfind(\"bert.encoder.layer.\", 0) == 0)", "// BertLayer", "GPT2Block",
                        "LlamaDecoderLayer", "a t5 block", "ViT patches", "encoder.layer.3"})
    EXPECT_TRUE(std::regex_search(std::string(s), model_names())) << s;
  for (const char* s : {"activity", "int t50 = 0;", "transformer layer units", "robust"})
    EXPECT_FALSE(std::regex_search(std::string(s), model_names())) << s;
}

TEST(CompilerModelNames, NoneInCompilerSources) {
  const std::filesystem::path dir = std::filesystem::path(TPUSIM_SOURCE_DIR) / "compiler";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))  // and its rooms
    if (e.path().extension() == ".cc" || e.path().extension() == ".h") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GT(files.size(), 10u);
  std::vector<std::string> bad;
  for (const auto& f : files)
    for (auto& l : offending_lines(f)) bad.push_back(std::move(l));
  std::ostringstream msg;
  for (const auto& l : bad) msg << "\n  " << l;
  EXPECT_TRUE(bad.empty()) << "model-specific names in compiler/ (take them from models/model.h instead):" << msg.str();
}

}  // namespace
