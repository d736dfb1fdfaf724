// A split's inputs as rows, wherever they are kept: one float32 tensor in memory, or the
// memory-mapped .npy shards of a data set larger than memory, in the type they are stored in.
// Rows come out as float32 tensors, gathered by index (a training batch) or by range (an
// evaluation chunk); stored uint8 rows are scaled by 1/255 and float16 rows widened as they
// are gathered, so a step reads its batch's rows and nothing more.
//
// Thread safety: read-only after construction; any number of threads gather at once (every
// replica of a process shares one).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace troupe {

class row_column {
 public:
  /// Consecutive rows outside a tensor: the first row's bytes and what keeps them alive (the
  /// file's mapping).
  struct shard {
    std::shared_ptr<const void> owner;
    const unsigned char* bytes = nullptr;
    int64_t rows = 0;
    std::string file;  ///< named by messages about its rows
  };

  /// What becomes of stored uint8 image rows [C, H, W] as they are gathered: scaled by 1/255,
  /// then per channel (x - mean) / std; training gathers (those given a step) first draw a
  /// random crop of the image padded by `crop_padding` zero pixels on each side and a
  /// horizontal flip, from (seed, step, row) alone, so a rerun, a resume and a re-split batch
  /// see the same pixels.
  struct pixel_rules {
    std::vector<float> mean;
    std::vector<float> std;
    int64_t crop_padding = 0;
    bool horizontal_flip = false;
    uint64_t seed = 0;
  };

  row_column() = default;
  /// Rows in memory: float32 [N, ...]. Implicit, so a split is made of a tensor as it always was.
  row_column(at::Tensor rows);  // NOLINT(google-explicit-constructor)
  /// Rows in shards, each row `row_shape` values stored as `type`: at::kFloat, at::kHalf
  /// (widened) or at::kByte (scaled by 1/255, or under pixel rules).
  row_column(std::vector<shard> shards, at::ScalarType type, std::vector<int64_t> row_shape);

  bool defined() const { return memory_.defined() || !shards_.empty(); }
  int64_t size() const;
  const std::vector<int64_t>& row_shape() const { return row_shape_; }
  /// Whether the rows are kept in their stored type (mapped files, decoded images) and widened
  /// as they are gathered (else they are float32 in memory).
  bool mapped() const { return !shards_.empty(); }
  /// The same rows under `rules` (uint8 rows only).
  row_column with_pixel_rules(pixel_rules rules) const;

  /// float32 [n, row_shape...] of the rows at `index` (int64 [n]), in its order. Mapped rows
  /// that hold a NaN or an infinity throw data_error naming the file and the row. `step`: the
  /// training step the rows are for (drawing their augmentation), or -1 for none.
  at::Tensor gather(const at::Tensor& index, int64_t step = -1) const;
  /// Rows [begin, begin + count): a view for rows in memory.
  at::Tensor range(int64_t begin, int64_t count) const;
  /// Every row: a view for rows in memory, a copy of a mapped file (for small sets and tests).
  at::Tensor whole() const { return range(0, size()); }
  /// The rows at `rows` (ascending or not), in that order: a copy for rows in memory, an index
  /// into the same shards for mapped ones (a held-out validation set costs no copy of the data).
  row_column subset(const std::vector<int64_t>& rows) const;

 private:
  // Where row `row` of this column lives: its shard and its row there.
  std::pair<std::size_t, int64_t> locate(int64_t row) const;
  at::Tensor gather_mapped(const std::vector<int64_t>& rows, int64_t step) const;
  at::Tensor apply_pixel_rules(const at::Tensor& images, const std::vector<int64_t>& rows,
                               int64_t step) const;

  at::Tensor memory_;
  std::vector<shard> shards_;
  std::vector<int64_t> shard_starts_;  ///< the first row of each shard, then the total
  at::ScalarType type_ = at::kFloat;
  std::vector<int64_t> row_shape_;
  std::size_t row_bytes_ = 0;
  /// The stored rows this column's rows are, in order; null when they are all of them.
  std::shared_ptr<const std::vector<int64_t>> selection_;
  std::shared_ptr<const pixel_rules> pixel_rules_;
};

}  // namespace troupe
