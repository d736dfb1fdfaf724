// Reads a gzipped IDX file with zlib in fixed-size chunks. Each error message starts with the
// path; the header is checked in full before any buffer is sized from it, and even then the
// buffer grows with the data actually read, so a lying header costs no memory.
#include "core/data/idx_file.hpp"

#include "core/errors.hpp"
#include "core/io/regular_file.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace troupe {
namespace {

// No IDX file troupe reads comes near this; anything above is a corrupt or hostile header.
constexpr uint64_t max_payload_bytes = uint64_t{1} << 31;
constexpr uint8_t unsigned_byte_type = 0x08;
constexpr int max_rank = 4;
constexpr size_t chunk_bytes = size_t{1} << 20;
// Up front we reserve at most this much (Fashion-MNIST's train images fit, 47 MB); a larger
// promise is only believed as the data arrives.
constexpr size_t max_reserve_bytes = size_t{64} << 20;
constexpr uint64_t max_trailing_counted = uint64_t{1} << 20;

struct gz_closer {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using gz_handle = std::unique_ptr<gzFile_s, gz_closer>;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw data_error(path + ": " + what);
}

std::string hex(const uint8_t* p, size_t n) {
  std::string out = "0x";
  char buf[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", p[i]);
    out += buf;
  }
  return out;
}

// One open IDX file: reads the unpacked stream and turns zlib's errors into data_errors.
class gz_reader {
 public:
  explicit gz_reader(const std::string& path) : path_(path) {
    auto opened = open_data_file(path);
    file_.reset(gzdopen(opened.descriptor(), "rb"));
    if (!file_)
      fail(path, "cannot open: out of memory");
    opened.release();                 // zlib closes it now
    gzbuffer(file_.get(), 1u << 17);  // fewer, larger reads of the compressed file
  }

  // Reads up to n bytes; fewer only at the end of a well-formed stream.
  size_t read(uint8_t* out, size_t n) {
    size_t done = 0;
    while (done < n) {
      const auto want = static_cast<unsigned>(std::min(n - done, chunk_bytes));
      const int got = gzread(file_.get(), out + done, want);
      if (got <= 0) {
        // zlib reports a cut-off gzip stream as a plain end of file, so ask gzerror either way.
        check_stream(got);
        break;
      }
      done += static_cast<size_t>(got);
      offset_ += static_cast<uint64_t>(got);
    }
    return done;
  }

  uint64_t offset() const { return offset_; }  ///< unpacked bytes read so far

 private:
  void check_stream(int got) {
    int code = Z_OK;
    const char* raw = gzerror(file_.get(), &code);
    if (got == 0 && code == Z_OK)
      return;
    std::string msg = raw != nullptr ? raw : "";
    // gzerror prefixes what it calls the file ("<fd:5>", as gzdopen opened it); our message
    // already starts with the path.
    if (const auto colon = msg.find(": "); msg.compare(0, 4, "<fd:") == 0 && colon != msg.npos)
      msg.erase(0, colon + 2);
    const auto where = " (after " + std::to_string(offset_) + " unpacked bytes)";
    if (code == Z_ERRNO)
      fail(path_, "read error: " + msg + where);
    if (code == Z_BUF_ERROR)
      fail(path_, "gzip stream is cut short: " + msg + where);
    fail(path_, "corrupt gzip stream: " + msg + where);
  }

  std::string path_;
  gz_handle file_;
  uint64_t offset_ = 0;
};

}  // namespace

namespace {

struct idx_header {
  std::vector<int64_t> dims;
  std::string shape;     ///< "60000x28x28", for messages
  uint64_t payload = 1;  ///< data bytes the header promises
};

// Reads and checks the magic number and every dimension, before anything is sized from them.
idx_header read_header(gz_reader& in, const std::string& path) {
  uint8_t magic[4];
  if (in.read(magic, 4) < 4)
    fail(path, "truncated: the file ends inside the 4-byte IDX magic number (" +
                   std::to_string(in.offset()) + " bytes)");
  if (magic[0] != 0 || magic[1] != 0)
    fail(path, "not an IDX file: bad magic number " + hex(magic, 4));
  if (magic[2] != unsigned_byte_type)
    fail(path, "unsupported IDX element type " + hex(magic + 2, 1) + " (only 0x08, unsigned byte)");
  const int rank = magic[3];
  if (rank < 1 || rank > max_rank)
    fail(path, "unsupported IDX dimension count " + std::to_string(rank) + " (expected 1 to " +
                   std::to_string(max_rank) + ")");
  idx_header h;
  for (int d = 0; d < rank; ++d) {
    uint8_t be[4];
    if (in.read(be, 4) < 4)
      fail(path, "truncated: the header declares " + std::to_string(rank) +
                     " dimensions but the file ends inside size " + std::to_string(d));
    const uint64_t size = (uint64_t{be[0]} << 24) | (uint64_t{be[1]} << 16) |
                          (uint64_t{be[2]} << 8) | uint64_t{be[3]};
    h.shape += (d ? "x" : "") + std::to_string(size);
    if (size == 0)
      fail(path, "dimension " + std::to_string(d) + " has size 0");
    // Checked after every factor: payload <= 2^31 and size < 2^32, so this cannot overflow.
    h.payload *= size;
    if (h.payload > max_payload_bytes)
      fail(path, "header promises more than " + std::to_string(max_payload_bytes) +
                     " bytes of data (dimensions " + h.shape + (d + 1 < rank ? "x..." : "") +
                     "); refusing it as corrupt");
    h.dims.push_back(static_cast<int64_t>(size));
  }
  return h;
}

}  // namespace

std::vector<int64_t> read_idx_dims(const std::string& path) {
  gz_reader in(path);
  return read_header(in, path).dims;
}

idx_array read_idx_file(const std::string& path) {
  gz_reader in(path);
  const auto header = read_header(in, path);
  const auto& shape = header.shape;
  const uint64_t payload = header.payload;
  idx_array out;
  out.dims = header.dims;

  // Grow with the data actually read, not with what the header claims.
  out.bytes.reserve(std::min<uint64_t>(payload, max_reserve_bytes));
  while (out.bytes.size() < payload) {
    const size_t have = out.bytes.size();
    const size_t want = std::min<uint64_t>(payload - have, chunk_bytes);
    out.bytes.resize(have + want);
    const size_t got = in.read(out.bytes.data() + have, want);
    if (got < want)
      fail(path, "truncated: the header (dimensions " + shape + ") promises " +
                     std::to_string(payload) + " data bytes, found " + std::to_string(have + got));
  }

  // Counted up to a bound: a tail of gigabytes that inflate from a few megabytes (a gzip bomb
  // after a valid file) is refused after a moment, not after unpacking all of it.
  uint8_t extra[4096];
  uint64_t trailing = 0;
  for (size_t got; trailing <= max_trailing_counted && (got = in.read(extra, sizeof extra)) > 0;)
    trailing += got;
  if (trailing != 0)
    fail(path,
         (trailing > max_trailing_counted ? "more than " + std::to_string(max_trailing_counted)
                                          : std::to_string(trailing)) +
             " trailing bytes after the " + std::to_string(payload) +
             " data bytes the header promises");
  return out;
}

}  // namespace troupe
