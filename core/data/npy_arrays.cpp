#include "core/data/npy_arrays.hpp"

#include "core/data/npy_header.hpp"
#include "core/data/targets.hpp"
#include "core/errors.hpp"
#include "core/io/mapped_file.hpp"
#include "core/model/model_builder.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>

namespace troupe {
namespace {

struct mapped_array {
  mapped_file_ptr file;
  npy_header header;
  std::vector<int64_t> row_shape() const {
    return std::vector<int64_t>(header.shape.begin() + 1, header.shape.end());
  }
  const unsigned char* rows() const { return file->data() + header.data_offset; }
};

mapped_array map_array(const std::string& path) {
  auto file = map_file(path);
  auto header = parse_npy_header(path, file->data(), file->size());
  return {std::move(file), std::move(header)};
}

// The shards of one column, which must agree in type and row shape.
std::vector<mapped_array> map_column(const std::vector<std::string>& paths) {
  std::vector<mapped_array> column;
  for (const auto& path : paths) {
    column.push_back(map_array(path));
    const auto& first = column.front();
    const auto& last = column.back();
    if (last.header.dtype != first.header.dtype || last.row_shape() != first.row_shape())
      throw data_error(fmt::format(
          "{}: holds {} rows of shape [{}], the first shard ({}) {} rows of shape [{}]: the "
          "shards of one array must agree",
          path, to_string(last.header.dtype), fmt::join(last.row_shape(), ", "), paths.front(),
          to_string(first.header.dtype), fmt::join(first.row_shape(), ", ")));
  }
  return column;
}

int64_t rows_in(const std::vector<mapped_array>& column) {
  int64_t rows = 0;
  for (const auto& a : column)
    rows += a.header.shape[0];
  return rows;
}

// 28 x 28 images in any of their usual layouts are rows of [1, 28, 28]; any other row shape
// is kept for a TorchScript model (the plan refuses it for the built-in ones).
std::vector<int64_t> model_row_shape(std::vector<int64_t> row) {
  const bool image = (row == std::vector<int64_t>{image_side, image_side}) ||
                     (row == std::vector<int64_t>{image_side * image_side});
  return image ? std::vector<int64_t>{1, image_side, image_side} : row;
}

at::ScalarType scalar_type_of(npy_dtype dtype) {
  switch (dtype) {
    case npy_dtype::float32:
      return at::kFloat;
    case npy_dtype::float16:
      return at::kHalf;
    case npy_dtype::uint8:
      return at::kByte;
    case npy_dtype::int64:
      return at::kLong;
    case npy_dtype::int32:
      return at::kInt;
    case npy_dtype::float64:
      return at::kDouble;
  }
  return at::kFloat;
}

row_column inputs_of(const std::vector<mapped_array>& column) {
  const auto& first = column.front();
  const auto type = scalar_type_of(first.header.dtype);
  if (type != at::kFloat && type != at::kHalf && type != at::kByte)
    throw data_error(fmt::format("{}: holds {} inputs; x must be float32, float16 or uint8",
                                 first.file->path(), to_string(first.header.dtype)));
  if (first.header.shape.size() < 2)
    throw data_error(fmt::format("{}: has shape ({}); x must be [N, ...] with a row per sample",
                                 first.file->path(), fmt::join(first.header.shape, ", ")));
  std::vector<row_column::shard> shards;
  for (const auto& a : column)
    shards.push_back({a.file, a.rows(), a.header.shape[0], a.file->path()});
  return row_column(std::move(shards), type, model_row_shape(first.row_shape()));
}

// The targets, read whole into memory (a copy: the mapping goes when this returns), int32 labels
// as int64 and float16 targets as float32, the form checked_targets takes.
at::Tensor targets_of(const std::vector<mapped_array>& column) {
  std::vector<at::Tensor> parts;
  for (const auto& a : column) {
    auto stored = at::from_blob(const_cast<unsigned char*>(a.rows()), a.header.shape,
                                at::TensorOptions(scalar_type_of(a.header.dtype)));
    const auto type = a.header.dtype == npy_dtype::int32     ? at::kLong
                      : a.header.dtype == npy_dtype::float16 ? at::kFloat
                                                             : stored.scalar_type();
    parts.push_back(stored.to(type, false, /*copy=*/true));
  }
  return parts.size() == 1 ? parts.front() : at::cat(parts);
}

std::string files_text(const std::vector<std::string>& files) {
  return files.size() == 1 ? files.front()
                           : fmt::format("{} ({} shards)", files.front(), files.size());
}

labeled_images read_split(const npy_files& files, const at::Tensor& train_labels) {
  const auto x = map_column(files.x);
  const auto y = map_column(files.y);
  if (rows_in(x) != rows_in(y))
    throw data_error(fmt::format("{} holds {} rows of x and {} {} of y: they must be equal",
                                 files_text(files.x), rows_in(x), files_text(files.y), rows_in(y)));
  auto targets = checked_targets(files_text(files.y), targets_of(y), train_labels);
  return {inputs_of(x), std::move(targets)};
}

}  // namespace

dataset load_npy_arrays(const npy_files& train, const npy_files& test) {
  dataset data;
  data.train = read_split(train, at::Tensor());
  data.classes = outputs_for(data.train.labels);
  data.test = read_split(test, data.train.labels);
  if (data.test.images.row_shape() != data.train.images.row_shape())
    throw data_error(
        fmt::format("{}: rows have shape [{}], the training arrays' ({}) [{}]: they must match",
                    files_text(test.x), fmt::join(data.test.images.row_shape(), ", "),
                    files_text(train.x), fmt::join(data.train.images.row_shape(), ", ")));
  data.description =
      fmt::format("npy ({} train, {} test, memory-mapped)", data.train.size(), data.test.size());
  return data;
}

}  // namespace troupe
