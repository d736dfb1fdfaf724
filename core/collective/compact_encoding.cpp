#include "core/collective/compact_encoding.hpp"

#include <ATen/ATen.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace troupe {
namespace {

constexpr int64_t header_bytes = 9;  // i64 count, u8 encoding

int64_t blocks_of(int64_t count) {
  return (count + int8_block - 1) / int8_block;
}

at::Tensor packed_int8(const at::Tensor& flat, at::Tensor& out) {
  const int64_t count = flat.numel();
  const int64_t blocks = blocks_of(count);
  // Padded with zeros to whole blocks: a zero changes no block's largest magnitude.
  auto padded = at::zeros({blocks * int8_block}, flat.options());
  padded.narrow(0, 0, count).copy_(flat);
  auto rows = padded.view({blocks, int8_block});
  auto scales = rows.abs().amax(1) / 127.0f;
  // A block of zeros has scale 0: divide by 1 there (its values are all 0).
  auto divisor = at::where(scales > 0, scales, at::ones_like(scales));
  auto q = (rows / divisor.unsqueeze(1)).round().clamp(-127, 127).to(at::kChar).view({-1});
  auto* bytes = out.data_ptr<uint8_t>() + header_bytes;
  std::memcpy(bytes, scales.data_ptr<float>(), static_cast<std::size_t>(blocks) * 4);
  std::memcpy(bytes + blocks * 4, q.data_ptr<int8_t>(), static_cast<std::size_t>(count));
  return out;
}

[[noreturn]] void refuse(const std::string& what) {
  throw std::invalid_argument("packed vector: " + what);
}

}  // namespace

int64_t packed_bytes(int64_t count, compression_kind kind) {
  switch (kind) {
    case compression_kind::bf16:
      return header_bytes + 2 * count;
    case compression_kind::int8:
      return header_bytes + 4 * blocks_of(count) + count;
    case compression_kind::none:
      break;
  }
  return 4 * count;
}

bool is_packed(const at::Tensor& t) {
  return t.defined() && t.scalar_type() == at::kByte;
}

at::Tensor pack(const at::Tensor& x, compression_kind kind) {
  if (kind == compression_kind::none)
    throw std::invalid_argument("pack: compression none has no packed form");
  const auto flat = x.detach().to(at::kFloat).contiguous().view({-1});
  const int64_t count = flat.numel();
  auto out = at::empty({packed_bytes(count, kind)}, at::TensorOptions().dtype(at::kByte));
  auto* bytes = out.data_ptr<uint8_t>();
  std::memcpy(bytes, &count, 8);
  bytes[8] = static_cast<uint8_t>(kind);
  if (kind == compression_kind::int8)
    return packed_int8(flat, out);
  const auto half = flat.to(at::kBFloat16);
  std::memcpy(bytes + header_bytes, half.data_ptr(), static_cast<std::size_t>(count) * 2);
  return out;
}

at::Tensor unpack(const at::Tensor& packed) {
  if (!is_packed(packed) || packed.dim() != 1)
    refuse("expected a 1-D uint8 tensor, got " +
           (packed.defined() ? std::string(packed.dtype().name()) + " of " +
                                   std::to_string(packed.dim()) + " dimensions"
                             : std::string("an undefined tensor")));
  const auto c = packed.contiguous();
  const int64_t size = c.numel();
  if (size < header_bytes)
    refuse(std::to_string(size) + " bytes, shorter than its 9-byte header");
  const auto* bytes = c.data_ptr<uint8_t>();
  int64_t count = 0;
  std::memcpy(&count, bytes, 8);
  const uint8_t code = bytes[8];
  if (code != static_cast<uint8_t>(compression_kind::bf16) &&
      code != static_cast<uint8_t>(compression_kind::int8))
    refuse("unknown encoding " + std::to_string(code));
  const auto kind = static_cast<compression_kind>(code);
  // count <= size bounds every product below: each value takes at least one byte.
  if (count < 0 || count > size || packed_bytes(count, kind) != size)
    refuse("the header promises " + std::to_string(count) + " values in " + to_string(kind) +
           ", which is not " + std::to_string(size) + " bytes");
  const auto* values = bytes + header_bytes;
  auto out = at::empty({count}, at::TensorOptions().dtype(at::kFloat));
  if (kind == compression_kind::bf16) {
    auto half = at::empty({count}, at::TensorOptions().dtype(at::kBFloat16));
    std::memcpy(half.data_ptr(), values, static_cast<std::size_t>(count) * 2);
    return out.copy_(half);
  }
  const int64_t blocks = blocks_of(count);
  auto scales = at::empty({blocks}, at::TensorOptions().dtype(at::kFloat));
  std::memcpy(scales.data_ptr<float>(), values, static_cast<std::size_t>(blocks) * 4);
  auto q = at::zeros({blocks * int8_block}, at::TensorOptions().dtype(at::kChar));
  std::memcpy(q.data_ptr<int8_t>(), values + blocks * 4, static_cast<std::size_t>(count));
  auto rows = q.to(at::kFloat).view({blocks, int8_block}) * scales.unsqueeze(1);
  return out.copy_(rows.view({-1}).narrow(0, 0, count));
}

at::Tensor error_feedback::encode(const at::Tensor& x) {
  const auto flat = x.detach().to(at::kFloat).contiguous().view({-1});
  const auto target =
      residual_.defined() && residual_.numel() == flat.numel() ? flat + residual_ : flat.clone();
  auto packed = pack(target, kind_);
  residual_ = target - unpack(packed);
  return packed;
}

}  // namespace troupe
