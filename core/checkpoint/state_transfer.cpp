#include "core/checkpoint/state_transfer.hpp"

#include "core/checkpoint/sha256.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>

namespace troupe {

packed_state pack_state(const at::Tensor& weights, const std::string& optimizer,
                        int64_t chunk_bytes) {
  TORCH_CHECK(weights.scalar_type() == at::kFloat && weights.dim() == 1,
              "pack_state: the weights must be a flat float32 tensor");
  TORCH_CHECK(chunk_bytes > 0, "pack_state: chunks of ", chunk_bytes, " bytes");
  const auto host = weights.to(at::kCPU).contiguous();
  packed_state p;
  p.chunk_bytes = chunk_bytes;
  p.weight_bytes = host.numel() * static_cast<int64_t>(sizeof(float));
  std::string whole(static_cast<std::size_t>(p.weight_bytes), '\0');
  if (p.weight_bytes > 0)
    std::memcpy(whole.data(), host.data_ptr<float>(), whole.size());
  whole += optimizer;
  p.total_bytes = static_cast<int64_t>(whole.size());
  p.digest = sha256_hex(whole);
  for (int64_t at = 0; at < p.total_bytes || p.chunks.empty(); at += chunk_bytes)
    p.chunks.push_back(
        whole.substr(static_cast<std::size_t>(at), static_cast<std::size_t>(chunk_bytes)));
  return p;
}

state_assembler::state_assembler(int64_t weight_values, int64_t max_total_bytes)
    : weight_values_(weight_values), max_total_bytes_(max_total_bytes) {}

std::string state_assembler::add(int64_t index, int64_t count, int64_t chunk_bytes,
                                 int64_t weight_bytes, int64_t total_bytes,
                                 const std::string& digest, const std::string& bytes) {
  const auto where = "state chunk " + std::to_string(index) + " of " + std::to_string(count);
  if (received_ == 0) {
    const auto model_bytes = weight_values_ * static_cast<int64_t>(sizeof(float));
    if (weight_bytes != model_bytes)
      return where + ": weights of " + std::to_string(weight_bytes) + " bytes, the model has " +
             std::to_string(model_bytes);
    if (total_bytes < weight_bytes || total_bytes > max_total_bytes_)
      return where + ": a state of " + std::to_string(total_bytes) + " bytes (at most " +
             std::to_string(max_total_bytes_) + ")";
    const int64_t chunks =
        chunk_bytes > 0 ? std::max<int64_t>(1, (total_bytes + chunk_bytes - 1) / chunk_bytes) : -1;
    if (count != chunks)
      return where + ": a state of " + std::to_string(total_bytes) + " bytes in chunks of " +
             std::to_string(chunk_bytes) + " is not " + std::to_string(count) + " chunks";
    count_ = count;
    chunk_bytes_ = chunk_bytes;
    weight_bytes_ = weight_bytes;
    total_bytes_ = total_bytes;
    digest_ = digest;
    whole_.assign(static_cast<std::size_t>(total_bytes), '\0');
    have_.assign(static_cast<std::size_t>(count), false);
  }
  if (count != count_ || chunk_bytes != chunk_bytes_ || weight_bytes != weight_bytes_ ||
      total_bytes != total_bytes_ || digest != digest_)
    return where + ": its header differs from the first chunk's";
  if (index < 0 || index >= count_)
    return where + ": no such chunk";
  if (have_[static_cast<std::size_t>(index)])
    return where + ": arrived twice";
  const int64_t offset = index * chunk_bytes_;
  const int64_t expected = std::min(chunk_bytes_, total_bytes_ - offset);
  if (static_cast<int64_t>(bytes.size()) != expected)
    return where + ": " + std::to_string(bytes.size()) + " bytes, expected " +
           std::to_string(expected);
  if (expected > 0)
    std::memcpy(whole_.data() + offset, bytes.data(), bytes.size());
  have_[static_cast<std::size_t>(index)] = true;
  ++received_;
  return "";
}

std::string state_assembler::take(at::Tensor& weights, std::string& optimizer) const {
  if (!complete())
    return "the state is incomplete: " + std::to_string(received_) + " of " +
           std::to_string(count_) + " chunks";
  if (sha256_hex(whole_) != digest_)
    return "the state's SHA-256 differs from the one it was sent with";
  weights = at::empty({weight_values_}, at::kFloat);
  if (weight_bytes_ > 0)
    std::memcpy(weights.data_ptr<float>(), whole_.data(), static_cast<std::size_t>(weight_bytes_));
  optimizer = whole_.substr(static_cast<std::size_t>(weight_bytes_));
  return "";
}

}  // namespace troupe
