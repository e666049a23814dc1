// The YAML document as the config loader sees it: a plain tree whose every node remembers the file and
// line it was written at, so that errors found after `include:` merging and `--set` overrides still
// point at the right place. yaml-cpp nodes carry a line but not a file, hence this copy.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim::config {

struct Entry;

struct Node {
  enum class Kind { Null, Scalar, Sequence, Map };
  Kind kind = Kind::Null;
  std::string scalar;          // Scalar: the text as written (unquoted)
  std::vector<Node> items;     // Sequence
  std::vector<Entry> entries;  // Map, in file order
  std::string file;            // where it was written ("--set" for overrides)
  int line = 0;                // 1-based; 0 if unknown. For a map value: the line of its key.

  bool is_map() const { return kind == Kind::Map; }
  const Node* find(std::string_view key) const;
  Node* find(std::string_view key);
  // Replaces the value of `key` (keeping its position) or appends it.
  Node& set(const std::string& key, Node value, int key_line = 0);
  bool erase(std::string_view key);
  // The value as written, in YAML flow style ("940", "[2, 2]", "{m: 1}"); long values are cut.
  std::string text() const;
  // The whole value as YAML flow text that parses back to the same tree (scalars quoted where YAML
  // would read them otherwise): what `--set PATH=VALUE` takes as VALUE.
  std::string flow() const;
};

struct Entry {
  std::string key;
  int line = 0;
  Node value;
};

// Parses YAML text. Syntax errors and duplicate keys become ConfigError with file:line. The trees of
// the last few small texts parsed (config files, not generated tables) are kept (per process,
// thread-safe): the result is a function of (text, file), and yaml-cpp takes ~0.3 ms for a shipped
// hardware file and its chip file, most of an in-process kernel run (tpusim.run) that reads them
// again each time.
Node parse_yaml(const std::string& text, const std::string& file);

// Limits of a config file's tree (docs: README, "Limits"), so that a hostile file cannot recurse or
// expand without bound: nesting depth (a self-referencing alias `a: &a [*a]` is infinitely deep)
// and the nodes after alias expansion (a "billion laughs" alias bomb is small text but exponential
// nodes). The shipped configs are under 10 levels and 2,000 nodes.
inline constexpr int kMaxYamlDepth = 64;
inline constexpr size_t kMaxYamlNodes = size_t(1) << 20;

// Reads a file; "file not found" is a ConfigError whose suggestion the caller provides.
std::string read_file(const std::string& path, const std::string& not_found_suggestion = {});
// Reads a config file; "file not found" suggests missing_file_hint(path, configs_subdir), which is
// worked out only then (it lists directories: more than reading a small file costs).
std::string read_config_file(const std::string& path, const std::string& configs_subdir);

// Resolves every `include: path` (or a list of paths) in the tree, recursively. The included file's
// mapping is merged at that node and the node's own keys override it. Paths are relative to the
// including file's directory (`base_dir` for `root`). With `embedded`, a path is looked up there first
// (as written, then relative to base_dir), so embedded defaults need no files on disk.
void resolve_includes(Node& root, const std::string& base_dir,
                      const std::map<std::string, std::string>* embedded = nullptr);

// Deep merge: keys of `over` replace those of `base`, except that two mappings merge recursively.
void merge_into(Node& base, const Node& over);

// Sets the file and line of every node of the tree (override values are all "written" at --set).
void set_origin(Node& n, const std::string& file, int line);

// The map that holds the last key of the dotted `path` ("a.b.c": the map at a.b; "c": `root`), the
// maps on the way created where missing (written at `file`, `line`): where --set and the front ends'
// rewrites (--maxtext-args) put a value.
Node& parent_of(Node& root, std::string_view path, const std::string& file, int line = 0);

// The suggestion for a config file that does not exist: the closest (by name) or all *.yaml files of
// the path's directory, else of `configs/<configs_subdir>` (from the working directory or the source tree).
std::string missing_file_hint(const std::string& path, const std::string& configs_subdir);

// "configs/hw/v3-8.yaml" -> "v3-8" (the default `name` of a config).
std::string file_stem(const std::string& path);

// The *.yaml files in `dir` (sorted, as `dir/name.yaml`); empty when the directory does not exist.
std::vector<std::string> yaml_files_in(const std::string& dir);

}  // namespace tpusim::config
