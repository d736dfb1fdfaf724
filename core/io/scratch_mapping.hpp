// Scratch memory backed by a file instead of the process's anonymous memory: a writable shared
// mapping of a file made in a folder and unlinked at once. Its pages belong to the page cache:
// written back to the file and dropped under memory pressure, read again when touched, so data
// larger than memory (decoded images, data.image.cache "disk") can be held. Being unlinked, the
// file goes with the last mapping, also when the process is killed: nothing is left behind.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

/// A contiguous uint8 tensor of `sizes` over such a mapping in `folder`. Throws data_error
/// naming the folder and the system's reason when the file cannot be made, sized or mapped,
/// and when the folder's file system has less free space than the tensor's bytes.
at::Tensor scratch_bytes(const std::vector<int64_t>& sizes, const std::string& folder);

/// $TMPDIR where it is set, else /tmp: where scratch files go unless a job names a folder.
std::string default_scratch_folder();

}  // namespace troupe
