#include "core/data/preprocessing.hpp"

#include "core/data/fashion_mnist.hpp"

#include <fmt/format.h>

namespace troupe {

nlohmann::ordered_json preprocessing_json(data_kind kind) {
  if (kind == data_kind::tensors)
    return {{"input",
             "x as saved: float32 or uint8 [N, ...]; [N, 28, 28] and [N, 784] become [N, 1, "
             "28, 28]"},
            {"scale", "uint8 x is divided by 255; float32 x is used as it is"},
            {"formula", "x/255 for uint8 x, else x"}};
  if (kind == data_kind::image_folder)
    return {{"input",
             "each image decoded (PNG, JPEG) to data.image.channels channels and brought "
             "to data.image.size (stretched, or scaled and center-cropped)"},
            {"formula", "(pixel/255 - data.image.mean)/data.image.std per channel"}};
  if (kind == data_kind::npy)
    return {{"input",
             "x as saved: float32, float16 or uint8 [N, ...]; [N, 28, 28] and [N, 784] "
             "become [N, 1, 28, 28]"},
            {"scale", "uint8 x is divided by 255; float16 x is widened to float32"},
            {"formula", "x/255 for uint8 x, else x"}};
  if (kind == data_kind::csv)
    return {{"input", "every column but the label's, in file order, as float32 [N, features]"},
            {"formula", "x as in the file"}};
  if (kind != data_kind::fashion_mnist)
    return nullptr;
  // Built from the constants the loader uses, so the description cannot drift from the code.
  return {
      {"input", "uint8 pixels x (0..255) of a 28x28 grayscale image, as [N, 1, 28, 28]"},
      {"scale", 1.0 / 255.0},
      {"mean", fashion_mnist_mean},
      {"std", fashion_mnist_std},
      {"formula", fmt::format("(x/255 - {:.4f})/{:.4f}", fashion_mnist_mean, fashion_mnist_std)}};
}

}  // namespace troupe
