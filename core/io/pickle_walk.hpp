// Walks a pickle as LibTorch's unpickler would read it, building nothing but a shadow of its
// stack: strings, integers, globals and tuples, everything else an opaque value. LibTorch 1.13
// trusts what a pickle states (the length of a string it allocates, the size of a storage it
// builds a tensor over); the walk checks every length against the bytes that follow, every memo
// index against the pickle's size, refuses opcodes that torch's picklers do not write, and lists
// the storages the pickle's persistent ids name with the bytes each declares and the bytes the
// tensors built over it reach. core/io/archive_storages holds those against the archive's
// records before LibTorch reads a byte of them.
//
// Thread safety: a pure function of its input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

/// One storage a pickle's persistent ids name: ("storage", torch.XStorage, key, location, numel).
struct pickled_storage {
  /// The record's name inside the archive's tensor folder ("0", "1", ...).
  std::string key;
  /// The storage type's name, e.g. "FloatStorage".
  std::string type;
  /// numel x the type's element size: what LibTorch takes the storage's size to be.
  uint64_t declared_bytes = 0;
  /// The furthest byte any tensor rebuilt over it (torch._utils._rebuild_tensor_v2) reads; 0
  /// when no tensor reads it.
  uint64_t reached_bytes = 0;
};

struct pickle_contents {
  /// Why LibTorch must not read this pickle, or "".
  std::string problem;
  /// Each storage once, in the order first named.
  std::vector<pickled_storage> storages;
};

pickle_contents walk_pickle(std::string_view pickle);

}  // namespace troupe
