// Datasets from the user's own files: per-example token lengths as a JSON list, a text or CSV file
// with one length per line, or JSON Lines of examples with a token-count field (docs/datasets.md).
//
// A dataset reference is a file when it is written `file:PATH`, or when PATH (before an optional
// `#FIELD`) ends in one of kLengthFileExtensions, or starts with '/', './' or '../'. Length-table
// keys (glue_mrpc/train/bert-base-cased) have no extension, so the two never collide.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/data/dataset.h"

namespace tpusim::data {

// .json: a list of lengths; .jsonl/.ndjson: JSON Lines; .txt: one length per line; .csv/.tsv: a column.
inline constexpr const char* kLengthFileExtensions[] = {".json", ".jsonl", ".ndjson", ".txt", ".csv", ".tsv"};

// Field (JSON Lines) or column (CSV/TSV) names taken as the token count when the reference names none,
// in this order of preference. A JSON Lines list field (input_ids) counts its elements.
inline constexpr const char* kLengthFieldNames[] = {"length", "num_tokens", "n_tokens", "token_count",
                                                    "input_ids_len", "len", "input_ids"};

bool is_file_ref(std::string_view ref);

struct LengthFileRef {
  std::string path;   // as written (no file: prefix, no #field)
  std::string field;  // "" = by kLengthFieldNames
};
LengthFileRef split_file_ref(std::string_view ref);

// A relative file reference rewritten against `base_dir` (the workload file's directory), keeping its
// `file:` prefix and `#field`; any other reference is returned unchanged.
std::string resolve_file_ref(std::string_view ref, const std::string& base_dir);

// The file exists (a missing one: ConfigError at `where`, listing the closest files beside it).
void require_length_file(const LengthFileRef& ref, const ErrorWhere& where);
// The untruncated lengths in file order. Errors (ConfigError) name the file and line (and field or
// column); a missing file lists the closest files beside it. `where` names the workload key in the
// message of a missing file.
std::vector<uint32_t> read_length_file(const LengthFileRef& ref, const ErrorWhere& where = {});
// The parser alone, for a format chosen by extension of `origin` (tests).
std::vector<uint32_t> parse_length_file(std::string_view text, const std::string& origin, const std::string& field = {});

}  // namespace tpusim::data
