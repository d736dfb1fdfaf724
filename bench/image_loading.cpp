// troupe's image loader on a folder: every image decoded and brought to size (load_dataset,
// every core), then every row gathered in training batches with its augmentation drawn and
// normalized, as the steps of one epoch gather them. bench/image_loading.py runs it beside
// torchvision's ImageFolder + DataLoader on the same folder and transforms.
//
//   image_loading_bench --folder DIR --size H W --channels C [--padding P] [--batch 256]
//
// Prints JSON: images, decode_s, augment_s, images_per_s over both (a first epoch), and
// later_epoch_images_per_s (decoded images are kept: later epochs only gather and augment).
#include "bench/checked_job.hpp"
#include "core/data/data_source.hpp"
#include "core/errors.hpp"

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <iostream>
#include <thread>

namespace {

void measure(const std::string& folder, const std::vector<int64_t>& size, int64_t channels,
             int64_t padding, int64_t batch);

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"troupe's image loader: decode, bring to size, augment, normalize"};
  std::string folder;
  std::vector<int64_t> size;
  int64_t channels = 1, padding = 2, batch = 256;
  app.add_option("--folder", folder, "an ImageFolder folder (used as train and test)")->required();
  app.add_option("--size", size, "height width")->required()->expected(2);
  app.add_option("--channels", channels, "1 or 3")->check(CLI::IsMember({1, 3}));
  app.add_option("--padding", padding, "random_crop_padding");
  app.add_option("--batch", batch, "rows per gathered batch")->check(CLI::Range(1, 1 << 24));
  CLI11_PARSE(app, argc, argv);
  try {
    measure(folder, size, channels, padding, batch);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "image_loading_bench: " << troupe::message_of(e) << '\n';
    return 1;
  }
}

namespace {

void measure(const std::string& folder, const std::vector<int64_t>& size, int64_t channels,
             int64_t padding, int64_t batch) {
  troupe::data_config config;
  config.kind = troupe::data_kind::image_folder;
  config.train_file = folder;
  config.test_file = folder;
  config.image.size = size;
  config.image.channels = channels;
  config.image.mean.assign(static_cast<std::size_t>(channels), 0.5);
  config.image.std.assign(static_cast<std::size_t>(channels), 0.25);
  config.augment.random_crop_padding = padding;
  config.augment.horizontal_flip = true;
  troupe::job_config job;
  job.name = "image_loading";
  job.data = config;
  config = troupe::bench::checked_job(job).data;  // sizes, channels, padding as a job checks them

  using clock_type = std::chrono::steady_clock;
  const auto start = clock_type::now();
  const auto data = troupe::load_dataset(config, 1);
  const auto decoded = clock_type::now();
  const auto rows = data->train.size();
  const auto order = at::randperm(rows, at::kLong);
  double checksum = 0;
  for (int64_t begin = 0; begin < rows; begin += batch) {
    const auto index = order.narrow(0, begin, std::min(batch, rows - begin));
    checksum += data->train.images.gather(index, begin / batch).sum().item<double>();
  }
  const auto augmented = clock_type::now();
  const auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  // load_dataset decodes the folder twice here (as train and as test): count both.
  const auto images = rows + data->test.size();
  const auto decode_s = seconds(start, decoded);
  const auto augment_s = seconds(decoded, augmented);
  nlohmann::json out = {{"images", images},
                        {"threads", std::thread::hardware_concurrency()},
                        {"decode_s", decode_s},
                        {"augment_s", augment_s},
                        {"images_per_s", static_cast<double>(images) /
                                             (decode_s + augment_s * static_cast<double>(images) /
                                                             static_cast<double>(rows))},
                        {"later_epoch_images_per_s", static_cast<double>(rows) / augment_s},
                        {"checksum", checksum}};
  std::cout << out.dump(2) << '\n';
}

}  // namespace
