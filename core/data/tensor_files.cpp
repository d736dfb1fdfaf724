#include "core/data/tensor_files.hpp"

#include "core/errors.hpp"
#include "core/io/weights_file.hpp"
#include "core/model/model_builder.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <map>

namespace troupe {
namespace {

std::string shape_text(const at::Tensor& t) {
  std::string out = "[";
  for (int64_t d = 0; d < t.dim(); ++d)
    out += (d > 0 ? ", " : "") + std::to_string(t.size(d));
  return out + "]";
}

std::map<std::string, at::Tensor> read_dict(const std::string& path) {
  std::vector<std::pair<std::string, at::Tensor>> named;
  try {
    named = load_weights(path);
  } catch (const std::exception& e) {
    // Python's torch.save writes the zip format since PyTorch 1.6; the legacy format (or
    // pickle_protocol > 2 objects LibTorch cannot rebuild) fails here.
    throw data_error(
        fmt::format("{}: not a readable torch.save file of tensors ({}); write it with "
                    "torch.save({{\"x\": X, \"y\": Y}}, path) (the default zip format, "
                    "_use_new_zipfile_serialization=True)",
                    path, e.what()));
  }
  std::map<std::string, at::Tensor> dict(named.begin(), named.end());
  if (dict.size() != 2 || !dict.count("x") || !dict.count("y")) {
    std::string keys;
    for (const auto& [k, v] : dict)
      keys += (keys.empty() ? "" : ", ") + ("\"" + k + "\"");
    throw data_error(fmt::format(
        "{}: needs a dict with exactly the keys \"x\" and \"y\", got {{{}}}", path, keys));
  }
  return dict;
}

// 28 x 28 images in any of their usual layouts become [N, 1, 28, 28], what the built-in models
// take; any other row shape is kept for a TorchScript model (the plan refuses it for the
// built-in ones).
at::Tensor images_of(const std::string& path, const at::Tensor& x) {
  const auto side = image_side;
  const bool image = (x.dim() == 4 && x.size(1) == 1 && x.size(2) == side && x.size(3) == side) ||
                     (x.dim() == 3 && x.size(1) == side && x.size(2) == side) ||
                     (x.dim() == 2 && x.size(1) == side * side);
  if (x.dim() < 2 || x.numel() == 0)
    throw data_error(
        fmt::format("{}: \"x\" has shape {}; it must be [N, ...] with at least one value per row",
                    path, shape_text(x)));
  at::Tensor images;
  if (x.scalar_type() == at::kByte)
    images = x.to(at::kFloat).div_(255.0);
  else if (x.scalar_type() == at::kFloat)
    images = x.contiguous();  // the unpickler's own copy, not the file's bytes: no clone needed
  else
    throw data_error(fmt::format("{}: \"x\" is {}; it must be float32 or uint8", path,
                                 c10::toString(x.scalar_type())));
  if (image)
    images = images.reshape({x.size(0), 1, side, side});
  if (const auto row = first_non_finite_row(images))
    throw data_error(
        fmt::format("{}: \"x\" holds non-finite values (first in row {})", path, *row));
  return images;
}

}  // namespace

labeled_images read_tensor_split(const std::string& path, const at::Tensor& train) {
  auto dict = read_dict(path);
  const auto& y = dict.at("y");
  const auto& x = dict.at("x");
  for (const auto* key : {"x", "y"})
    if (dict.at(key).dim() >= 1 && dict.at(key).size(0) == 0)
      throw data_error(fmt::format("{}: \"{}\" has 0 rows", path, key));
  const auto where = path + ": \"y\"";
  auto targets = checked_targets(where, y, train);
  if (x.dim() < 1 || x.size(0) != y.size(0))
    throw data_error(fmt::format("{}: \"x\" has {} rows and \"y\" {}: they must be equal", path,
                                 x.dim() < 1 ? 0 : x.size(0), y.size(0)));
  if (y.size(0) == 0)
    throw data_error(path + ": holds no rows");
  return {images_of(path, x), std::move(targets)};
}

dataset load_tensor_files(const std::string& train_path, const std::string& test_path) {
  dataset data;
  data.train = read_tensor_split(train_path, at::Tensor());
  data.classes = outputs_for(data.train.labels);
  data.test = read_tensor_split(test_path, data.train.labels);
  if (data.test.images.row_shape() != data.train.images.row_shape())
    throw data_error(fmt::format(
        "{}: \"x\" rows have shape [{}], the training file's ({}) [{}]: they must match", test_path,
        fmt::join(data.test.images.row_shape(), ", "), train_path,
        fmt::join(data.train.images.row_shape(), ", ")));
  data.description =
      fmt::format("tensors ({} train, {} test)", data.train.size(), data.test.size());
  return data;
}

}  // namespace troupe
