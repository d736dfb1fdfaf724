#include "core/data/image_folder.hpp"

#include "core/data/image_decode.hpp"
#include "core/errors.hpp"
#include "core/io/scratch_mapping.hpp"
#include "core/io/whole_file.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <set>
#include <thread>

namespace troupe {
namespace {

namespace fs = std::filesystem;

bool is_image_file(const fs::path& path) {
  auto extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension == ".png" || extension == ".jpg" || extension == ".jpeg";
}

// An image file larger than this is not one troupe would decode: 8192 x 8192 pixels of 16-bit RGBA
// stored without compression take 512 MiB. Refused before it is read, each decoding thread
// holding a whole file at a time.
constexpr std::size_t max_image_file_bytes = std::size_t{1} << 30;

// One image brought to [channels, height, width]: stretched, or scaled to cover the size and
// cut to its center; shrinking antialiased (as PIL and torchvision's antialias=True do). Returns
// an error instead where the scaled image would be larger than any image decoded (a 1000000 x 1
// image scaled to cover 64 x 64 would be 64 x 64000000 floats, 49 GB).
at::Tensor fit_image(const decoded_image& image, const image_config& config, std::string& error) {
  const auto height = config.size[0], width = config.size[1];
  auto pixels = at::from_blob(const_cast<uint8_t*>(image.pixels.data()),
                              {image.height, image.width, image.channels}, at::kByte)
                    .permute({2, 0, 1});
  if (image.height == height && image.width == width)
    return pixels.contiguous();
  int64_t to_height = height, to_width = width;
  if (config.center_crop) {
    const double scale = std::max(static_cast<double>(height) / static_cast<double>(image.height),
                                  static_cast<double>(width) / static_cast<double>(image.width));
    to_height = std::max(height, static_cast<int64_t>(std::lround(image.height * scale)));
    to_width = std::max(width, static_cast<int64_t>(std::lround(image.width * scale)));
    if (static_cast<double>(to_height) * static_cast<double>(to_width) >
        static_cast<double>(max_image_pixels)) {
      error = fmt::format(
          "{} x {} pixels (height x width) are too narrow to crop to {} x {}: scaled to cover "
          "it, the image would be {} x {}, more than {} pixels",
          image.height, image.width, height, width, to_height, to_width, max_image_pixels);
      return {};
    }
  }
  auto floats = pixels.unsqueeze(0).to(at::kFloat);
  const bool shrinking = to_height < image.height || to_width < image.width;
  auto resized = shrinking ? at::_upsample_bilinear2d_aa(floats, {to_height, to_width}, false)
                           : at::upsample_bilinear2d(floats, {to_height, to_width}, false);
  resized = resized[0]
                .narrow(1, (to_height - height) / 2, height)
                .narrow(2, (to_width - width) / 2, width);
  return resized.round_().clamp_(0, 255).to(at::kByte).contiguous();
}

struct decoded_split {
  at::Tensor images;                 ///< uint8 [N, C, H, W]
  at::Tensor labels;                 ///< int64 [N]
  std::vector<std::string> skipped;  ///< "file: why" of each image left out
};

decoded_split decode_split(const image_listing& listing, const image_config& config,
                           bool skip_bad) {
  const auto n = static_cast<int64_t>(listing.files.size());
  const auto channels = config.channels;
  const std::vector<int64_t> sizes{n, channels, config.size[0], config.size[1]};
  auto images = config.cache_on_disk
                    ? scratch_bytes(sizes, config.cache_dir.empty() ? default_scratch_folder()
                                                                    : config.cache_dir)
                    : at::empty(sizes, at::kByte);
  std::vector<std::string> errors(listing.files.size());
  std::atomic<int64_t> next{0};
  // Nothing may leave a decoding thread: whatever goes wrong with one image (memory included) is
  // that image's error, named with its file.
  const auto decode_one = [&](int64_t i) -> std::string {
    const auto& file = listing.files[static_cast<std::size_t>(i)];
    const auto named = [&file](const std::string& what) {
      return what.compare(0, file.size(), file) == 0 ? what : file + ": " + what;
    };
    try {
      const auto image =
          decode_image(read_whole_file(file, max_image_file_bytes), static_cast<int>(channels));
      if (!image.error.empty())
        return file + ": " + image.error;
      std::string error;
      auto fitted = fit_image(image, config, error);
      if (!error.empty())
        return file + ": " + error;
      images[i].copy_(fitted);
      return {};
    } catch (const std::length_error& e) {
      return named(e.what()) + " (an image of at most 2^26 pixels)";
    } catch (const std::bad_alloc&) {
      return file + ": out of memory while decoding it";
    } catch (const c10::Error& e) {
      return file + ": " + e.what_without_backtrace();
    } catch (const std::exception& e) {
      return named(e.what());
    }
  };
  const auto work = [&] {
    for (int64_t i = next++; i < n; i = next++)
      errors[static_cast<std::size_t>(i)] = decode_one(i);
  };
  const auto threads = std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 64);
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (auto& t : pool)
    t.join();

  decoded_split out;
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < n; ++i) {
    const auto& error = errors[static_cast<std::size_t>(i)];
    if (error.empty()) {
      kept.push_back(i);
      continue;
    }
    if (!skip_bad)
      throw data_error(error + " (data.bad_images \"skip\" leaves such images out)");
    out.skipped.push_back(error);
  }
  if (kept.empty())
    throw data_error("no image could be decoded; the first: " + out.skipped.front());
  // The images kept, moved up over those left out in their own storage (memory or scratch
  // file): no second copy of a folder that may not fit twice. Row i comes from row kept[i] >= i,
  // which no earlier move has written over.
  for (std::size_t i = 0; i < kept.size(); ++i)
    if (kept[i] != static_cast<int64_t>(i))
      images[static_cast<int64_t>(i)].copy_(images[kept[i]]);
  out.images = images.narrow(0, 0, static_cast<int64_t>(kept.size()));
  out.labels = at::tensor(listing.labels, at::kLong).index_select(0, at::tensor(kept, at::kLong));
  return out;
}

// The decoded images as rows a step gathers, under the job's normalization and augmentation.
row_column rows_of(const at::Tensor& images, const data_config& config, uint64_t seed) {
  const auto owner = std::make_shared<at::Tensor>(images);
  row_column::shard shard{owner, static_cast<const unsigned char*>(images.data_ptr()),
                          images.size(0), config.train_file};
  const auto& image = config.image;
  row_column column({std::move(shard)}, at::kByte, {image.channels, image.size[0], image.size[1]});
  row_column::pixel_rules rules;
  rules.mean.assign(image.mean.begin(), image.mean.end());
  rules.std.assign(image.std.begin(), image.std.end());
  if (rules.mean.empty() != rules.std.empty()) {
    rules.mean.resize(static_cast<std::size_t>(image.channels), 0.0f);
    rules.std.resize(static_cast<std::size_t>(image.channels), 1.0f);
  }
  rules.crop_padding = config.augment.random_crop_padding;
  rules.horizontal_flip = config.augment.horizontal_flip;
  rules.seed = seed ^ 0x6175676d656e74ULL;  // "augment": a stream of its own
  return column.with_pixel_rules(std::move(rules));
}

}  // namespace

image_listing list_image_folder(const std::string& root) {
  std::error_code error;
  if (!fs::is_directory(root, error))
    throw data_error(root +
                     ": not a folder (an image_folder split is a folder of one folder "
                     "per class)");
  image_listing listing;
  for (const auto& entry : fs::directory_iterator(root, error)) {
    std::error_code type_error;
    if (entry.is_directory(type_error))
      listing.classes.push_back(entry.path().filename().string());
    else if (type_error && type_error != std::errc::no_such_file_or_directory)
      throw data_error(entry.path().string() + ": cannot be read (" + type_error.message() + ")");
  }
  if (error)
    throw data_error(root + ": cannot be listed (" + error.message() + ")");
  std::sort(listing.classes.begin(), listing.classes.end());
  if (listing.classes.empty())
    throw data_error(root + ": holds no class folders (one folder per class, its images in it)");
  for (std::size_t c = 0; c < listing.classes.size(); ++c) {
    const auto folder = fs::path(root) / listing.classes[c];
    std::vector<std::string> files;
    // Links to folders are followed; one back to a folder this class already went through (a
    // link to "." or to a parent) would list its images again and again.
    std::set<fs::path> walked{fs::canonical(folder, error)};
    for (auto it = fs::recursive_directory_iterator(
             folder, fs::directory_options::follow_directory_symlink, error);
         !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
      std::error_code type_error;
      if (it->is_directory(type_error)) {
        if (!walked.insert(fs::canonical(it->path(), type_error)).second)
          throw data_error(it->path().string() +
                           ": a link back to a folder already listed (a loop of links, or two "
                           "links to one folder)");
      } else if (is_image_file(it->path()) && (type_error == std::errc::no_such_file_or_directory ||
                                               (!type_error && it->is_regular_file(type_error)))) {
        // A link to nothing named like an image is a sample that cannot be read: named when
        // decoded (or skipped and counted under bad_images "skip"), not left out unsaid.
        files.push_back(it->path().string());
      }
      // A link to itself cannot be followed: named, not left out unsaid.
      if (type_error && type_error != std::errc::no_such_file_or_directory)
        throw data_error(it->path().string() + ": cannot be read (" + type_error.message() + ")");
    }
    if (error)
      throw data_error(folder.string() + ": cannot be listed (" + error.message() + ")");
    if (files.empty())
      throw data_error(folder.string() +
                       ": a class folder without images (.png, .jpg or .jpeg); remove it or add "
                       "its images");
    std::sort(files.begin(), files.end());
    listing.files.insert(listing.files.end(), files.begin(), files.end());
    listing.labels.insert(listing.labels.end(), files.size(), static_cast<int64_t>(c));
  }
  return listing;
}

dataset load_image_folders(const data_config& config, uint64_t seed) {
  const auto train = list_image_folder(config.train_file);
  const auto test = list_image_folder(config.test_file);
  if (test.classes != train.classes)
    throw data_error(
        fmt::format("{}: holds the classes {}, the training folder ({}) {}: they "
                    "must be the same",
                    config.test_file, fmt::join(test.classes, ", "), config.train_file,
                    fmt::join(train.classes, ", ")));
  auto train_images = decode_split(train, config.image, config.skip_bad_images);
  auto test_images = decode_split(test, config.image, config.skip_bad_images);
  dataset data;
  data.classes = static_cast<int64_t>(train.classes.size());
  data.train = {rows_of(train_images.images, config, seed), train_images.labels};
  auto test_config = config;
  test_config.augment = {};
  data.test = {rows_of(test_images.images, test_config, seed), test_images.labels};
  data.skipped = std::move(train_images.skipped);
  data.skipped.insert(data.skipped.end(), test_images.skipped.begin(), test_images.skipped.end());
  data.description = fmt::format("image_folder ({} train, {} test, {} classes)", data.train.size(),
                                 data.test.size(), data.classes);
  return data;
}

}  // namespace troupe
