// main() of a fuzz target built without libFuzzer (TPUSIM_FUZZ=OFF): feeds every file given on the
// command line (or every file under a directory) to LLVMFuzzerTestOneInput, and N prefixes of each
// (--prefixes=N, default 64: a truncated input reaches each "end of text" path). An input that
// crashes the harness or throws what the target does not allow fails the ctest test that runs it over
// the seed corpus, so the harness itself is tested in every build. Prints how many inputs ran.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  size_t prefixes = 64;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--prefixes=", 0) == 0) {
      prefixes = std::stoul(arg.substr(11));
    } else if (std::filesystem::is_directory(argv[i])) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(argv[i]))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.emplace_back(argv[i]);
    }
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string s = ss.str();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    for (size_t n = 0; n < s.size(); n += 1 + s.size() / (prefixes ? prefixes : 1))
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), n);
  }
  std::cout << "replayed " << files.size() << " inputs\n";
  return files.empty() ? 1 : 0;
}
