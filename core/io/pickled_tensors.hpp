// Reads a dictionary of tensors that torch::jit::pickle_save wrote (state.pt, final_weights.pt)
// from bytes that may come from outside, checked at every step LibTorch 1.13 does not check:
// the zip container (core/io/archive_check), reads clamped to the buffer, and each tensor's
// storage against the record it was read from. LibTorch's own pickle_load takes a storage's
// length from the pickle, beside a record of any size: a crafted file made a 6400-byte record
// back a tensor of 15506 bytes (found by tests/fuzz/checkpoint_files).
#pragma once

#include <ATen/core/Dict.h>
#include <ATen/core/Tensor.h>

#include <string>
#include <string_view>

namespace troupe {

/// Throws std::runtime_error beginning with `what` for anything that is not a dictionary of
/// tensors whose every byte lies in the archive.
c10::Dict<std::string, at::Tensor> read_pickled_tensors(std::string_view bytes,
                                                        const std::string& what);

}  // namespace troupe
