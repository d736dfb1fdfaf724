// Images as people keep them: `"data": {"type": "image_folder", "train": "DIR", "test": "DIR",
// "image": {"size": [H, W], "channels": 3, "mean": [...], "std": [...]}}`, each folder laid out
// as torchvision's ImageFolder reads it: one folder per class, classes numbered in sorted order
// (the mapping torchvision gives), every .png, .jpg and .jpeg below a class folder (any case,
// subfolders too) one sample, in sorted order.
//
// Every image is decoded once, by as many threads as the machine has cores (libpng,
// libjpeg-turbo), brought to `size` and kept as uint8 [N, channels, H, W] in memory: a quarter
// of float32's size. Steps then gather their rows, draw their augmentation (a random crop with
// padding, a horizontal flip) from (seed, step, row) and normalize them (core/data/row_column).
// An image that cannot be decoded fails the load naming the file and why, or, with
// data.bad_images "skip", is left out and counted.
#pragma once

#include "core/data/dataset.hpp"
#include "core/job/job_config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

struct image_listing {
  std::vector<std::string> classes;  ///< folder names, sorted
  std::vector<std::string> files;    ///< every image, class by class, each class's sorted
  std::vector<int64_t> labels;       ///< the class of each file
};

/// The images of `root`, as ImageFolder lists them. Throws data_error naming the folder for a
/// missing folder, one without class folders, or a class folder without images.
image_listing list_image_folder(const std::string& root);

/// Both folders, decoded (no validation rows held out yet); the test folder must have the
/// training folder's classes. `seed` draws the training augmentation.
dataset load_image_folders(const data_config& config, uint64_t seed);

}  // namespace troupe
