// The driver's check that replicas hold identical weights after a replacement joined: each one
// that must agree (every live replica under sync; elsewhere the donor and those handed its
// state) reports a SHA-256 of its flat weights at the step boundary where the join completed,
// before it computes the next step, and the digests are compared here. A difference is a bug in
// the handover (the final weights would be compared only at the end of the run, long after
// the step that parted them), so the run ends naming the replica.
//
// Thread safety: none; the driver owns one check at a time.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace troupe {

/// SHA-256 of a flat tensor's bytes as lowercase hex (copied to a contiguous CPU tensor first
/// where it is not one).
std::string weights_digest(const at::Tensor& flat);

class replica_digest_check {
 public:
  /// The replicas `ranks` must hold the same weights after `step`, in membership `epoch`.
  replica_digest_check(int64_t epoch, int64_t step, std::vector<int64_t> ranks);

  int64_t epoch() const { return epoch_; }
  int64_t step() const { return step_; }
  const std::vector<int64_t>& ranks() const { return ranks_; }

  /// One replica's answer: the step its weights are after and their digest. Returns false (and
  /// keeps nothing) for a rank not asked or one that already answered.
  bool add(int64_t rank, int64_t step, const std::string& digest);
  /// Every rank asked has answered.
  bool complete() const;
  /// Empty when every answer is after `step` and all digests are equal; else what differs,
  /// with each replica named by `label` (e.g. "replica 2 (node c)").
  std::string disagreement(const std::function<std::string(int64_t)>& label) const;
  /// The digest they agree on (valid once complete() and disagreement() is empty).
  const std::string& digest() const;

 private:
  int64_t epoch_;
  int64_t step_;
  std::vector<int64_t> ranks_;  ///< ascending
  std::map<int64_t, std::pair<int64_t, std::string>> answers_;
};

}  // namespace troupe
