// Shows training on your own data and keeping the weights: put your images and labels in a
// troupe::dataset, plan and run a job on it with two synchronous replicas, save the final
// weights as a file that Python's torch.load reads ({name: tensor}, PyTorch's state_dict keys),
// then load that file into a fresh model and check its test accuracy against the run's.
//
//   ./build/examples/own_data [WEIGHTS.pt [DATA.pt]]      (default: own_data_weights.pt)
//
// Without DATA.pt it makes up a data set in code (make_quadrants). DATA.pt is your data as
// Python writes it:
//   torch.save({"train_images": X, "train_labels": y, "test_images": Xt, "test_labels": yt},
//   "d.pt")
// with images float32 [N, 1, 28, 28] or [N, 784] and labels int64 in [0, classes).
//
// Expected output (figures vary a little with the machine):
//   own data: 3000 train, 600 test, 4 classes (the quadrant holding a faint bright square)
//   epoch 1 step 46/138 loss 0.14...
//   epoch 2 step 92/138 loss 0.04...
//   epoch 3 step 138/138 loss 0.007...
//   succeeded: 138 steps, final train loss 0.018..., test accuracy 0.958...
//   saved 4 tensors to own_data_weights.pt: fc1.weight [32, 784] fc1.bias [32] out.weight ...
//   reloaded into a new model: test accuracy 0.958... (the run's: 0.958...)
#include "actors/run_job.hpp"
#include "core/data/data_source.hpp"
#include "core/io/weights_file.hpp"
#include "core/model/model_builder.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

namespace {

// Your data goes here. troupe's models take images of 1 x 28 x 28 floats (flatten anything else
// to 784 features and view it as [N, 1, 28, 28]) and int64 labels in [0, classes). This set is
// made up: class k is noise with a faint bright square in quadrant k.
troupe::labeled_images make_quadrants(int64_t rows, at::Generator& gen) {
  auto labels = at::randint(4, {rows}, gen, at::kLong);
  auto images = at::randn({rows, 1, 28, 28}, gen);
  auto accessor = labels.accessor<int64_t, 1>();
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t top = accessor[i] / 2 * 14;
    const int64_t left = accessor[i] % 2 * 14;
    images[i].slice(1, top, top + 14).slice(2, left, left + 14).add_(0.25);
  }
  return {images, labels};
}

std::string shape_of(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d)
    s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

// Reads DATA.pt (see the top) with troupe's reader of {name: tensor} files, the one that reads
// saved weights back. Images of [N, 784] are viewed as [N, 1, 28, 28].
troupe::dataset read_data_file(const std::string& path) {
  std::map<std::string, at::Tensor> file;
  for (auto& [name, tensor] : troupe::load_weights(path))
    file[name] = tensor;
  const auto get = [&](const std::string& name) {
    const auto it = file.find(name);
    if (it == file.end())
      throw std::runtime_error(path + " holds no " + name);
    return it->second;
  };
  // What the rest takes for granted, checked here: the file is yours, LibTorch's own words about
  // a wrong shape would not name it.
  const auto split = [&](const std::string& which) {
    const auto images = get(which + "_images").to(at::kFloat).contiguous();
    const auto labels = get(which + "_labels");
    if (images.dim() < 1 || images.size(0) == 0 || images.numel() != images.size(0) * 784)
      throw std::runtime_error(path + ": " + which + "_images must be [N, 784] or [N, 1, 28, 28]" +
                               " with N > 0, got " + shape_of(images));
    if (labels.dim() != 1 || labels.size(0) != images.size(0) || labels.is_floating_point())
      throw std::runtime_error(path + ": " + which + "_labels must be integers [" +
                               std::to_string(images.size(0)) + "], got " + shape_of(labels));
    return troupe::labeled_images{images.view({images.size(0), 1, 28, 28}), labels.to(at::kLong)};
  };
  troupe::dataset data;
  data.train = split("train");
  data.test = split("test");
  data.classes =
      std::max(data.train.labels.max().item<int64_t>(), data.test.labels.max().item<int64_t>()) + 1;
  data.description = path;
  return data;
}

// Normalize both splits with the training set's mean and standard deviation, as troupe's own
// data sets are; whoever uses the saved weights must apply the same two figures to new inputs.
void normalize(troupe::dataset& data) {
  const auto train = data.train.images.whole();
  const auto mean = train.mean().item<double>();
  const auto std = train.std().item<double>();
  data.train.images = (train - mean) / std;
  data.test.images = (data.test.images.whole() - mean) / std;
}

}  // namespace

int train_and_save(int argc, char** argv) {
  const std::string weights_path = argc > 1 ? argv[1] : "own_data_weights.pt";
  // Before training, not after: a path that cannot be written would waste the run.
  const auto folder = std::filesystem::path(weights_path).parent_path();
  if (!std::filesystem::is_directory(folder.empty() ? "." : folder))
    throw std::runtime_error(weights_path + ": its folder does not exist");

  auto data = std::make_shared<troupe::dataset>();
  if (argc > 2) {
    *data = read_data_file(argv[2]);
  } else {
    auto gen = at::detail::createCPUGenerator(/*seed_in=*/7);
    data->description = "the quadrant holding a faint bright square";
    data->classes = 4;
    data->train = make_quadrants(3000, gen);
    data->test = make_quadrants(600, gen);
  }
  normalize(*data);
  std::printf("own data: %ld train, %ld test, %ld classes (%s)\n",
              static_cast<long>(data->train.size()), static_cast<long>(data->test.size()),
              static_cast<long>(data->classes), data->description.c_str());

  troupe::job_config job;
  job.name = "own_data";
  job.seed = 3;
  job.model.hidden = {32};
  job.optimizer.lr = 0.02;
  job.optimizer.momentum = 0.9;
  job.training.epochs = 3;
  job.training.batch_size = 64;
  job.parallelism.replicas = 2;

  // The plan is made from the data's facts (rows, classes); keep it to name the weights.
  const auto plan = troupe::make_run_plan(job, troupe::facts_of(*data));
  troupe::run_options options;
  const int64_t per_epoch = plan.rules.steps_per_epoch();
  options.on_progress = [per_epoch](const troupe::progress_update& p) {
    // At the end of each epoch. Evaluations (p.evaluation) repeat the step they follow: each
    // step is reported once.
    if (!p.evaluation && p.step % per_epoch == 0)
      std::printf("epoch %ld step %ld/%ld loss %.4f\n", static_cast<long>(p.epoch + 1),
                  static_cast<long>(p.step), static_cast<long>(p.total_steps), p.loss);
  };
  const auto report = troupe::run_job(plan, data, options);
  if (!report.succeeded()) {
    std::fprintf(stderr, "failed: %s\n", report.error.c_str());
    return 1;
  }
  std::printf("succeeded: %ld steps, final train loss %.4f, test accuracy %.4f\n",
              static_cast<long>(report.steps), report.final_train_loss.value_or(-1),
              report.test_accuracy.value_or(0));

  // The flat weights the run collected, cut into named parameters, written atomically.
  troupe::save_weights(weights_path, troupe::named_weights(plan, report.final_weights));
  const auto loaded = troupe::load_weights(weights_path);
  std::printf("saved %zu tensors to %s:", loaded.size(), weights_path.c_str());
  for (const auto& [name, tensor] : loaded)
    std::printf(" %s %s", name.c_str(), shape_of(tensor).c_str());
  std::printf("\n");

  // Use them: a fresh model of the job's architecture takes the file's tensors by name.
  std::map<std::string, at::Tensor> by_name(loaded.begin(), loaded.end());
  auto model = troupe::build_model(job.model, data->classes);
  at::NoGradGuard no_grad;
  for (auto& parameter : model->named_parameters()) {
    const auto it = by_name.find(parameter.key());
    if (it == by_name.end()) {
      std::fprintf(stderr, "%s holds no %s\n", weights_path.c_str(), parameter.key().c_str());
      return 1;
    }
    parameter.value().copy_(it->second);
  }
  model->eval();
  const auto predicted = model->forward(data->test.images.whole()).argmax(1);
  const auto accuracy = predicted.eq(data->test.labels).to(at::kDouble).mean().item<double>();
  std::printf("reloaded into a new model: test accuracy %.4f (the run's: %.4f)\n", accuracy,
              report.test_accuracy.value_or(0));
  return 0;
}

// Every error (a data file that is not what the top says, a path that cannot be written, a job
// the plan refuses) as one line and exit status 1, not std::terminate's abort.
int main(int argc, char** argv) {
  try {
    return train_and_save(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "own_data: %s\n", e.what());
    return 1;
  }
}
