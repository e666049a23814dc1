// The generated part of docs/config-*.md and docs/report-fields.md: the Markdown schema reference (or
// the report field catalogue) between two markers.
// Shared by tpusim_gen_config_docs (writes it) and docs_test.cc (checks it is current).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "config/hw_loader.h"
#include "sweep/sweep_config.h"
#include "workloads/config/workload_config.h"
#include "workloads/report/report_fields.h"

namespace tpusim::testing {

inline constexpr const char* kBeginMarker =
    "<!-- BEGIN GENERATED: schema reference. Do not edit; regenerate with tpusim_gen_config_docs. -->\n";
inline constexpr const char* kEndMarker = "<!-- END GENERATED -->\n";

struct GeneratedDoc {
  std::string relative_path;  // from the repository root
  std::string reference;      // the generated Markdown
};

inline std::vector<GeneratedDoc> generated_docs() {
  return {{"docs/config-hw.md", hw_schema_markdown()},
          {"docs/config-workload.md", workload_schema_markdown()},
          {"docs/config-sweep.md", sweep::sweep_schema_markdown()},
          {"docs/report-fields.md", report_fields_markdown()}};
}

// The text between the markers, or nullopt when a marker is missing.
inline std::optional<std::string> generated_section(const std::string& doc) {
  const size_t b = doc.find(kBeginMarker);
  const size_t e = doc.find(kEndMarker);
  if (b == std::string::npos || e == std::string::npos || e < b) return std::nullopt;
  const size_t start = b + std::string(kBeginMarker).size();
  return doc.substr(start, e - start);
}

// `doc` with its generated section replaced (markers appended at the end if absent).
inline std::string with_generated_section(const std::string& doc, const std::string& reference) {
  const size_t b = doc.find(kBeginMarker);
  const size_t e = doc.find(kEndMarker);
  if (b == std::string::npos || e == std::string::npos || e < b)
    return doc + "\n" + kBeginMarker + reference + kEndMarker;
  return doc.substr(0, b) + kBeginMarker + reference + doc.substr(e);
}

inline const char* kRegenerateHint =
    "regenerate with: cmake --build <build-dir> --target tpusim_gen_config_docs && "
    "<build-dir>/tests/config/tpusim_gen_config_docs";

}  // namespace tpusim::testing
