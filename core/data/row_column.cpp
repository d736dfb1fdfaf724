#include "core/data/row_column.hpp"

#include "core/data/targets.hpp"
#include "core/errors.hpp"
#include "core/model/random_draws.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>

namespace troupe {
namespace {

std::vector<int64_t> with_rows(int64_t rows, const std::vector<int64_t>& row_shape) {
  std::vector<int64_t> shape{rows};
  shape.insert(shape.end(), row_shape.begin(), row_shape.end());
  return shape;
}

}  // namespace

row_column::row_column(at::Tensor rows) : memory_(std::move(rows)) {
  if (memory_.defined())
    row_shape_.assign(memory_.sizes().begin() + 1, memory_.sizes().end());
}

row_column::row_column(std::vector<shard> shards, at::ScalarType type,
                       std::vector<int64_t> row_shape)
    : shards_(std::move(shards)), type_(type), row_shape_(std::move(row_shape)) {
  TORCH_CHECK(type_ == at::kFloat || type_ == at::kHalf || type_ == at::kByte,
              "row_column: rows stored as ", type_, ", not float32, float16 or uint8");
  const auto values =
      std::accumulate(row_shape_.begin(), row_shape_.end(), int64_t{1}, std::multiplies<int64_t>());
  row_bytes_ = static_cast<std::size_t>(values) * at::elementSize(type_);
  shard_starts_.push_back(0);
  for (const auto& s : shards_)
    shard_starts_.push_back(shard_starts_.back() + s.rows);
}

int64_t row_column::size() const {
  if (memory_.defined())
    return memory_.size(0);
  if (selection_)
    return static_cast<int64_t>(selection_->size());
  return shard_starts_.empty() ? 0 : shard_starts_.back();
}

std::pair<std::size_t, int64_t> row_column::locate(int64_t row) const {
  const auto stored_row = selection_ ? (*selection_)[static_cast<std::size_t>(row)] : row;
  const auto after = std::upper_bound(shard_starts_.begin(), shard_starts_.end(), stored_row);
  const auto shard = static_cast<std::size_t>(after - shard_starts_.begin() - 1);
  return {shard, stored_row - shard_starts_[shard]};
}

row_column row_column::with_pixel_rules(pixel_rules rules) const {
  row_column out = *this;
  out.pixel_rules_ = std::make_shared<const pixel_rules>(std::move(rules));
  return out;
}

// One pass over each image: the crop's window read from the source (zeros outside it), the
// flip by reading its rows backwards, and the normalization by a table of the 256 values per
// channel. Padding the batch, stacking the crops and normalizing with tensor operations took
// four times as long (224 x 224 RGB images, bench/image_loading.py).
at::Tensor row_column::apply_pixel_rules(const at::Tensor& images, const std::vector<int64_t>& rows,
                                         int64_t step) const {
  const auto& rules = *pixel_rules_;
  const auto n = images.size(0), channels = images.size(1);
  const auto height = images.size(2), width = images.size(3);
  std::vector<float> table(static_cast<std::size_t>(channels) * 256);
  for (int64_t c = 0; c < channels; ++c)
    for (int v = 0; v < 256; ++v) {
      float value = static_cast<float>(v) / 255.0f;
      if (!rules.mean.empty())
        value = (value - rules.mean[static_cast<std::size_t>(c)]) /
                rules.std[static_cast<std::size_t>(c)];
      table[static_cast<std::size_t>(c * 256 + v)] = value;
    }
  const auto pad = rules.crop_padding;
  const bool augment = step >= 0 && (pad > 0 || rules.horizontal_flip);
  auto out = at::empty(images.sizes(), at::kFloat);
  const auto* in = images.data_ptr<uint8_t>();
  auto* to = out.data_ptr<float>();
  const auto plane = height * width;
  for (int64_t i = 0; i < n; ++i) {
    int64_t down = 0, right = 0;  // where the crop's corner sits in the image
    bool flip = false;
    if (augment) {
      const auto span = static_cast<uint64_t>(2 * pad + 1);
      // The draw of (seed, row, step), the same on every machine (core/model/random_draws).
      auto draw = draw_seed(rules.seed, rows[static_cast<std::size_t>(i)], step);
      down = static_cast<int64_t>(draw % span) - pad;
      draw /= span;
      right = static_cast<int64_t>(draw % span) - pad;
      draw /= span;
      flip = rules.horizontal_flip && (draw & 1);
    }
    for (int64_t c = 0; c < channels; ++c) {
      const float* values = table.data() + c * 256;
      const uint8_t* source = in + (i * channels + c) * plane;
      float* target = to + (i * channels + c) * plane;
      // Output column x reads source column x + right (flipped: width - 1 - x + right); the
      // columns [first, last) read inside the image, the rest the padding's zeros.
      const auto first = flip ? std::max<int64_t>(0, right) : std::max<int64_t>(0, -right);
      const auto last = flip ? std::min(width, width + right) : std::min(width, width - right);
      for (int64_t y = 0; y < height; ++y) {
        float* line = target + y * width;
        const auto sy = y + down;
        if (sy < 0 || sy >= height || first >= last) {
          std::fill(line, line + width, values[0]);
          continue;
        }
        std::fill(line, line + first, values[0]);
        std::fill(line + last, line + width, values[0]);
        const uint8_t* from = source + sy * width;
        if (flip)
          for (int64_t x = first; x < last; ++x)
            line[x] = values[from[width - 1 - x + right]];
        else
          for (int64_t x = first; x < last; ++x)
            line[x] = values[from[x + right]];
      }
    }
  }
  return out;
}

at::Tensor row_column::gather_mapped(const std::vector<int64_t>& rows, int64_t step) const {
  const auto n = static_cast<int64_t>(rows.size());
  auto stored_rows = at::empty(with_rows(n, row_shape_), at::TensorOptions(type_));
  auto* out = static_cast<unsigned char*>(stored_rows.data_ptr());
  for (int64_t i = 0; i < n; ++i) {
    const auto row = rows[static_cast<std::size_t>(i)];
    if (row < 0 || row >= size())
      throw std::out_of_range(fmt::format("row {} of a column of {} rows", row, size()));
    const auto [s, local] = locate(row);
    std::memcpy(out + static_cast<std::size_t>(i) * row_bytes_,
                shards_[s].bytes + static_cast<std::size_t>(local) * row_bytes_, row_bytes_);
  }
  if (type_ == at::kByte && pixel_rules_)
    return apply_pixel_rules(stored_rows, rows, step);
  if (type_ == at::kByte)
    return stored_rows.to(at::kFloat).div_(255.0);
  auto floats = type_ == at::kHalf ? stored_rows.to(at::kFloat) : stored_rows;
  // A sum is finite when every value is (a NaN or an infinity carries through it), and costs a
  // tenth of a per-value mask; only a sum that is not (overflow, or a bad value) is searched.
  if (std::isfinite(floats.sum().item<float>()))
    return floats;
  if (const auto bad = first_non_finite_row(floats)) {
    const auto [s, local] = locate(rows[static_cast<std::size_t>(*bad)]);
    throw data_error(fmt::format("{}: row {} holds a NaN or an infinity", shards_[s].file, local));
  }
  return floats;
}

at::Tensor row_column::gather(const at::Tensor& index, int64_t step) const {
  if (memory_.defined())
    return memory_.index_select(0, index);
  const auto contiguous = index.to(at::kLong).contiguous();
  const auto* first = contiguous.data_ptr<int64_t>();
  return gather_mapped(std::vector<int64_t>(first, first + contiguous.numel()), step);
}

at::Tensor row_column::range(int64_t begin, int64_t count) const {
  if (memory_.defined())
    return memory_.narrow(0, begin, count);
  std::vector<int64_t> rows(static_cast<std::size_t>(count));
  std::iota(rows.begin(), rows.end(), begin);
  return gather_mapped(rows, -1);
}

row_column row_column::subset(const std::vector<int64_t>& rows) const {
  if (memory_.defined())
    return row_column(memory_.index_select(0, at::tensor(rows, at::kLong)));
  auto picked = std::make_shared<std::vector<int64_t>>();
  picked->reserve(rows.size());
  for (const auto row : rows)
    picked->push_back(selection_ ? (*selection_)[static_cast<std::size_t>(row)] : row);
  row_column out = *this;
  out.selection_ = std::move(picked);
  return out;
}

}  // namespace troupe
