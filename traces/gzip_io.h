// Whole-file gzip I/O for traces (zlib): a BERT training trace is ~5 MB of repetitive JSON that
// compresses ~10x, and Perfetto UI and chrome://tracing open .json.gz directly.
#pragma once
#include <string>
#include <string_view>

namespace tpusim {

// True when `bytes` start with the gzip magic (1f 8b).
bool is_gzip(std::string_view bytes);

// gzip-compresses `data` (zlib level 6; the header carries no time stamp or file name, so equal
// inputs give equal bytes).
std::string gzip_compress(std::string_view data);

// Inflates a gzip stream (several concatenated members allowed). Throws std::runtime_error with
// zlib's reason for corrupt or truncated data.
std::string gzip_decompress(std::string_view data);

// The file's contents, inflated when it is gzip-compressed (recognised by its magic, not its name).
// Throws TraceError naming `path` when it is missing, unreadable or corrupt.
std::string read_maybe_gzip_file(const std::string& path);

// Writes `data` to `path`, gzip-compressed when `gzip`. Throws std::runtime_error naming the path.
void write_file(const std::string& path, std::string_view data, bool gzip);

}  // namespace tpusim
