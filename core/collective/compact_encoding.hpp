// Compact encodings of a float32 vector for a slow link (parallelism.compression): what an async
// worker pushes and what the parameter server hands out, and local_sgd's weights to average and
// their average, can cross the wire in 2 bytes (bf16) or about 1 byte (int8) a value instead of 4.
//
// A packed vector is a 1-D uint8 tensor, so it travels in the messages that carry tensors today:
//   i64 count | u8 encoding | the values
//   bf16: count bfloat16 values (round to nearest even).
//   int8: ceil(count / int8_block) float32 scales, then count int8 values; value i is
//         int8[i] * scale[i / int8_block], the scale of a block being its largest magnitude / 127.
// Nothing is lost for good: an error_feedback encoder adds what it dropped last time to what it
// encodes next (error feedback, as in 1-bit SGD), so the sum of what was decoded follows the sum
// of what was given to within one encoding's error; the parameter server does the same for the
// weights by sending each worker the difference between the master weights and what that worker
// holds (see actors/workers/parameter_server). local_sgd's replicas and the driver share one base,
// the last average: weights go as their difference from it and so does the next average, which
// every replica adds to the same base, so they stay identical (actors/driver/driver_actions).
//
// unpack trusts nothing: a tensor that is not a packed vector, or whose size does not match its
// header, is refused with std::invalid_argument naming what is wrong.
//
// Thread safety: the functions are pure; an error_feedback is owned by one actor.
#pragma once

#include "core/job/job_config.hpp"

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace troupe {

/// Values per int8 scale: small enough that one large value costs a block little precision,
/// large enough that the scales add 0.4 % to the bytes.
constexpr int64_t int8_block = 1024;

/// `x` (float32, any shape: read as a flat vector) packed in `kind` (bf16 or int8).
at::Tensor pack(const at::Tensor& x, compression_kind kind);
/// A packed vector back in float32 (1-D). Throws std::invalid_argument if it is not one.
at::Tensor unpack(const at::Tensor& packed);
/// Whether `t` is a packed vector (uint8): the tensors the messages carry otherwise are float.
bool is_packed(const at::Tensor& t);
/// The bytes `count` values take packed in `kind`, header included.
int64_t packed_bytes(int64_t count, compression_kind kind);

/// Packs a stream of vectors, carrying each one's encoding error into the next.
class error_feedback {
 public:
  explicit error_feedback(compression_kind kind) : kind_(kind) {}
  /// pack(x + the error left from the last call); remembers the new error.
  at::Tensor encode(const at::Tensor& x);
  /// What the last encodes dropped and the next will add (undefined before the first).
  const at::Tensor& residual() const { return residual_; }

 private:
  compression_kind kind_;
  at::Tensor residual_;
};

}  // namespace troupe
