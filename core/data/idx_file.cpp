#include "core/data/idx_file.hpp"

#include "core/errors.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace troupe {
namespace {

// No IDX file troupe reads comes near this; anything above is a corrupt or hostile header.
constexpr uint64_t max_payload_bytes = uint64_t{1} << 31;
constexpr unsigned char unsigned_byte_type = 0x08;

struct gz_closer {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using gz_handle = std::unique_ptr<gzFile_s, gz_closer>;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw data_error(path + ": " + what);
}

std::string gz_message(gzFile f) {
  int code = Z_OK;
  const char* msg = gzerror(f, &code);
  if (code == Z_ERRNO)
    return std::strerror(errno);
  return msg != nullptr && *msg != '\0' ? msg : "read error";
}

// Reads up to n bytes; returns how many were read (fewer only at the end of the stream).
size_t read_some(gzFile f, const std::string& path, uint8_t* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    const auto chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 20));
    const int got = gzread(f, out + done, chunk);
    if (got < 0)
      fail(path, "corrupt gzip data: " + gz_message(f));
    if (got == 0)
      break;
    done += static_cast<size_t>(got);
  }
  return done;
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

}  // namespace

idx_array read_idx_file(const std::string& path) {
  errno = 0;
  gz_handle file(gzopen(path.c_str(), "rb"));
  if (!file)
    fail(path, std::string("cannot open: ") + (errno ? std::strerror(errno) : "gzopen failed"));

  uint8_t magic[4];
  if (read_some(file.get(), path, magic, 4) < 4)
    fail(path, "truncated: the file ends inside the 4-byte IDX header");
  if (magic[0] != 0 || magic[1] != 0)
    fail(path, "not an IDX file: bad magic number " + hex(magic, 4));
  if (magic[2] != unsigned_byte_type)
    fail(path, "unsupported IDX element type " + hex(magic + 2, 1) + " (only 0x08, unsigned byte)");
  const int rank = magic[3];
  if (rank < 1 || rank > 4)
    fail(path, "unsupported IDX dimension count " + std::to_string(rank));

  idx_array out;
  uint64_t payload = 1;
  for (int d = 0; d < rank; ++d) {
    uint8_t be[4];
    if (read_some(file.get(), path, be, 4) < 4)
      fail(path, "truncated: the file ends inside the dimension sizes");
    const uint64_t size = (uint64_t{be[0]} << 24) | (uint64_t{be[1]} << 16) |
                          (uint64_t{be[2]} << 8) | uint64_t{be[3]};
    if (size == 0)
      fail(path, "dimension " + std::to_string(d) + " has size 0");
    payload *= size;
    if (payload > max_payload_bytes)
      fail(path, "header promises more than " + std::to_string(max_payload_bytes) +
                     " bytes of data; refusing it as corrupt");
    out.dims.push_back(static_cast<int64_t>(size));
  }

  out.bytes.resize(payload);
  const size_t got = read_some(file.get(), path, out.bytes.data(), out.bytes.size());
  if (got < payload)
    fail(path, "truncated: the header promises " + std::to_string(payload) + " data bytes, found " +
                   std::to_string(got));
  uint8_t extra;
  if (read_some(file.get(), path, &extra, 1) != 0)
    fail(path, "trailing bytes after the " + std::to_string(payload) + " data bytes");
  return out;
}

}  // namespace troupe
