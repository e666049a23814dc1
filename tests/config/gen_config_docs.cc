// Rewrites the generated schema reference of docs/config-hw.md, docs/config-workload.md and
// docs/config-sweep.md from the schemas declared in code, and docs/report-fields.md from the report
// field catalogue. Usage: tpusim_gen_config_docs [REPO_ROOT]   (default: the source tree)
#include <fstream>
#include <iostream>
#include <sstream>

#include "tests/config/config_docs.h"

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : TPUSIM_SOURCE_DIR;
  for (const auto& d : tpusim::testing::generated_docs()) {
    const std::string path = root + "/" + d.relative_path;
    std::string old;
    if (std::ifstream in(path); in) {
      std::ostringstream ss;
      ss << in.rdbuf();
      old = ss.str();
    }
    const std::string updated = tpusim::testing::with_generated_section(old, d.reference);
    if (updated == old) {
      std::cout << path << ": up to date\n";
      continue;
    }
    std::ofstream(path, std::ios::binary) << updated;
    std::cout << path << ": updated\n";
  }
  return 0;
}
