#include "core/run/replica_digests.hpp"

#include "core/checkpoint/sha256.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>

namespace troupe {

std::string weights_digest(const at::Tensor& flat) {
  const auto bytes = flat.to(at::kCPU).contiguous();
  return sha256_hex(std::string_view(static_cast<const char*>(bytes.data_ptr()), bytes.nbytes()));
}

replica_digest_check::replica_digest_check(int64_t epoch, int64_t step, std::vector<int64_t> ranks)
    : epoch_(epoch), step_(step), ranks_(std::move(ranks)) {
  std::sort(ranks_.begin(), ranks_.end());
  ranks_.erase(std::unique(ranks_.begin(), ranks_.end()), ranks_.end());
  if (ranks_.empty())
    throw std::invalid_argument("replica_digest_check: no replicas to compare");
}

bool replica_digest_check::add(int64_t rank, int64_t step, const std::string& digest) {
  if (!std::binary_search(ranks_.begin(), ranks_.end(), rank) || answers_.count(rank) > 0)
    return false;
  answers_.emplace(rank, std::make_pair(step, digest));
  return true;
}

bool replica_digest_check::complete() const {
  return answers_.size() == ranks_.size();
}

std::string replica_digest_check::disagreement(
    const std::function<std::string(int64_t)>& label) const {
  if (!complete())
    return "not every replica answered";
  // A replica at another step is named first: its weights could not be compared at all.
  for (const auto& [rank, answer] : answers_)
    if (answer.first != step_)
      return label(rank) + " reported its weights after step " + std::to_string(answer.first) +
             ", expected after step " + std::to_string(step_);
  const auto& [first, reference] = *answers_.begin();
  for (const auto& [rank, answer] : answers_)
    if (answer.second != reference.second)
      return label(rank) + " holds weights different from " + label(first) + "'s after step " +
             std::to_string(step_) + " (SHA-256 " + answer.second.substr(0, 12) + "... against " +
             reference.second.substr(0, 12) + "...)";
  return "";
}

const std::string& replica_digest_check::digest() const {
  if (answers_.empty())
    throw std::logic_error("replica_digest_check::digest: no answers");
  return answers_.begin()->second.second;
}

}  // namespace troupe
