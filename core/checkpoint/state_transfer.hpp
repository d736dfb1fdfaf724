// A worker's state on its way to another worker (a replacement that joins a running job, or a
// survivor one step behind after a node was lost): the flat float32 weights followed by the
// optimizer's state bytes, cut into chunks that each repeat the whole's sizes and SHA-256. The
// receiver checks every chunk against them, then the whole against its digest, before it
// trusts any of it. Pure: the actors move the chunks (messages/membership.hpp state_chunk).
//
// Thread safety: none; each object belongs to one actor.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

/// A state cut for sending: `chunks` in order, and the whole's sizes and digest.
struct packed_state {
  int64_t chunk_bytes = 0;  ///< of every chunk but the last
  int64_t weight_bytes = 0;
  int64_t total_bytes = 0;
  std::string digest;  ///< SHA-256 of the whole, hex
  std::vector<std::string> chunks;
};

/// Bytes per chunk: well below any link's frame limit (core/cluster/link_limits), large enough
/// that a model's state takes few messages.
inline constexpr int64_t state_chunk_bytes = 1 << 20;

/// `weights`: a flat float32 tensor (any device; copied to the host); `optimizer`: its bytes.
packed_state pack_state(const at::Tensor& weights, const std::string& optimizer,
                        int64_t chunk_bytes = state_chunk_bytes);

/// Collects the chunks of one state.
class state_assembler {
 public:
  /// `weight_values`: the model's flat size (the weights must be exactly that many floats);
  /// `max_total_bytes`: the most the whole may claim (nothing larger is allocated).
  state_assembler(int64_t weight_values, int64_t max_total_bytes);

  /// Chunk `index` of `count` (each `chunk_bytes` but the last) of a whole of `total_bytes`
  /// (the first `weight_bytes` of them the weights) whose SHA-256 is `digest`. Returns "" or
  /// what is wrong with it; nothing is kept from a chunk that is wrong.
  std::string add(int64_t index, int64_t count, int64_t chunk_bytes, int64_t weight_bytes,
                  int64_t total_bytes, const std::string& digest, const std::string& bytes);
  bool complete() const { return received_ > 0 && received_ == count_; }
  /// Once complete: checks the whole against its digest; "" and the weights and optimizer
  /// state, or what is wrong.
  std::string take(at::Tensor& weights, std::string& optimizer) const;

 private:
  int64_t weight_values_;
  int64_t max_total_bytes_;
  int64_t count_ = 0;
  int64_t weight_bytes_ = 0;
  int64_t total_bytes_ = 0;
  std::string digest_;
  std::string whole_;
  std::vector<bool> have_;
  int64_t received_ = 0;
  int64_t chunk_bytes_ = 0;
};

}  // namespace troupe
