#include "traces/gzip_io.h"

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "traces/trace_error.h"

namespace tpusim {
namespace {

// windowBits 15 + 16: a gzip wrapper instead of zlib's; + 32 on inflate: detect either.
constexpr int kGzipWindowBits = 15 + 16;
constexpr int kAutoWindowBits = 15 + 32;
constexpr size_t kChunk = 1 << 16;

std::string zlib_reason(const z_stream& z, int rc) {
  if (z.msg) return z.msg;
  switch (rc) {
    case Z_BUF_ERROR: return "truncated data";
    case Z_DATA_ERROR: return "corrupt data";
    case Z_MEM_ERROR: return "out of memory";
    default: return fmt::format("zlib error {}", rc);
  }
}

}  // namespace

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gzip_compress(std::string_view data) {
  if (data.size() > 0xFFFFFFFFu) throw std::runtime_error("zlib: cannot compress 4 GiB or more in one piece");
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("zlib: deflateInit2 failed");
  std::string out;
  out.resize(deflateBound(&z, uLong(data.size())) + 64);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = uInt(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  // One call: the output buffer is deflateBound()-sized, so Z_FINISH completes (inputs < 4 GiB).
  const int rc = deflate(&z, Z_FINISH);
  const std::string reason = rc == Z_STREAM_END ? "" : zlib_reason(z, rc);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (!reason.empty()) throw std::runtime_error("zlib: compression failed: " + reason);
  return out;
}

std::string gzip_decompress(std::string_view data) {
  std::string out;
  size_t pos = 0;
  // Concatenated gzip members are one file to `gunzip`; inflate each in turn.
  while (pos < data.size()) {
    z_stream z{};
    if (inflateInit2(&z, kAutoWindowBits) != Z_OK) throw std::runtime_error("zlib: inflateInit2 failed");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + pos));
    z.avail_in = uInt(data.size() - pos);
    int rc = Z_OK;
    char buf[kChunk];
    while (rc != Z_STREAM_END) {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = kChunk;
      rc = inflate(&z, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END) {
        // Z_BUF_ERROR with no input left: the stream ended before its trailer.
        const std::string reason = rc == Z_BUF_ERROR && z.avail_in == 0 ? "truncated data" : zlib_reason(z, rc);
        inflateEnd(&z);
        throw std::runtime_error(reason);
      }
      out.append(buf, kChunk - z.avail_out);
    }
    pos += z.total_in;
    inflateEnd(&z);
    // Trailing zero padding (some tools write it) is not another member.
    while (pos < data.size() && data[pos] == '\0') ++pos;
  }
  return out;
}

std::string read_maybe_gzip_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw TraceError(path, "no such file", "", "write one with `tpusim run --trace` (it writes DIR/trace.json)");
  if (!fs::is_regular_file(path, ec)) throw TraceError(path, "is not a regular file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw TraceError(path, "cannot be read");
  std::ostringstream ss;
  ss << f.rdbuf();
  std::string bytes = std::move(ss).str();
  if (!is_gzip(bytes)) return bytes;
  try {
    return gzip_decompress(bytes);
  } catch (const std::runtime_error& e) {
    throw TraceError(path, std::string("is not a valid gzip file (") + e.what() + ")");
  }
}

void write_file(const std::string& path, std::string_view data, bool gzip) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error(fmt::format("{}: cannot open for writing", path));
  if (gzip) {
    const std::string z = gzip_compress(data);
    f.write(z.data(), std::streamsize(z.size()));
  } else {
    f.write(data.data(), std::streamsize(data.size()));
  }
  f.flush();
  if (!f) throw std::runtime_error(fmt::format("{}: write failed", path));
}

}  // namespace tpusim
