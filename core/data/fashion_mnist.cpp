// Fashion-MNIST from its four IDX files: shape and label checks that name the file, then a
// whole-tensor conversion of the bytes (no per-pixel work in C++ loops but the label check).
#include "core/data/fashion_mnist.hpp"

#include "core/data/idx_file.hpp"
#include "core/errors.hpp"

#include <ATen/ATen.h>

namespace troupe {
namespace {

constexpr int64_t side = 28;

std::string shape_of(const idx_array& a) {
  std::string s;
  for (size_t i = 0; i < a.dims.size(); ++i)
    s += (i ? "x" : "") + std::to_string(a.dims[i]);
  return s;
}

std::string images_file(const std::string& folder, const std::string& prefix) {
  return folder + "/" + prefix + "-images-idx3-ubyte.gz";
}

std::string labels_file(const std::string& folder, const std::string& prefix) {
  return folder + "/" + prefix + "-labels-idx1-ubyte.gz";
}

labeled_images load_split(const std::string& folder, const std::string& prefix) {
  const auto images_path = images_file(folder, prefix);
  const auto labels_path = labels_file(folder, prefix);
  auto images = read_idx_file(images_path);
  if (images.dims.size() != 3 || images.dims[1] != side || images.dims[2] != side)
    throw data_error(images_path + ": expected images of 28x28 pixels (N x 28 x 28), found " +
                     shape_of(images));
  auto labels = read_idx_file(labels_path);
  if (labels.dims.size() != 1)
    throw data_error(labels_path + ": expected 1 dimension of labels, found " + shape_of(labels));
  if (labels.dims[0] != images.dims[0])
    throw data_error(labels_path + ": holds " + std::to_string(labels.dims[0]) + " labels but " +
                     images_path + " holds " + std::to_string(images.dims[0]) + " images");
  for (size_t i = 0; i < labels.bytes.size(); ++i)
    if (labels.bytes[i] >= fashion_mnist_classes)
      throw data_error(labels_path + ": label at index " + std::to_string(i) + " is " +
                       std::to_string(labels.bytes[i]) + ", expected 0..9");

  const int64_t n = images.dims[0];
  labeled_images out;
  // from_blob borrows the byte vectors, which die with this function; the dtype conversions
  // copy, so the returned tensors own their memory. (pixel/255 - mean)/std in exactly that
  // order, as torchvision-style Python code computes it, so both see bit-identical inputs.
  out.images = at::from_blob(images.bytes.data(), {n, 1, side, side}, at::kByte)
                   .to(at::kFloat)
                   .div_(255.0)
                   .sub_(fashion_mnist_mean)
                   .div_(fashion_mnist_std);
  out.labels = at::from_blob(labels.bytes.data(), {n}, at::kByte).to(at::kLong);
  return out;
}

}  // namespace

std::vector<std::string> fashion_mnist_files(const std::string& folder) {
  return {images_file(folder, "train"), labels_file(folder, "train"), images_file(folder, "t10k"),
          labels_file(folder, "t10k")};
}

fashion_mnist_rows count_fashion_mnist(const std::string& folder) {
  // Only the image files' headers: a few bytes each, however large the files.
  return {read_idx_dims(images_file(folder, "train")).front(),
          read_idx_dims(images_file(folder, "t10k")).front()};
}

dataset load_fashion_mnist(const std::string& folder) {
  dataset d;
  d.classes = fashion_mnist_classes;
  d.train = load_split(folder, "train");
  d.test = load_split(folder, "t10k");
  d.description = "fashion_mnist (" + std::to_string(d.train.size()) + " train, " +
                  std::to_string(d.test.size()) + " test)";
  return d;
}

}  // namespace troupe
