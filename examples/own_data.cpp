// Shows training on your own data and keeping the weights: put your images and labels in a
// troupe::dataset, plan and run a job on it with two synchronous replicas, save the final
// weights as a file that Python's torch.load reads ({name: tensor}, PyTorch's state_dict keys),
// then load that file into a fresh model and check its test accuracy against the run's.
//
//   ./build/examples/own_data [WEIGHTS.pt]      (default: own_data_weights.pt)
//
// Expected output (figures vary a little with the machine):
//   own data: 3000 train, 600 test, 4 classes (the quadrant holding a faint bright square)
//   epoch 1 step 46/138 loss 0.6031
//   ...
//   succeeded: 138 steps, final train loss 0.0312, test accuracy 0.9950
//   saved 4 tensors to own_data_weights.pt: out.bias [4], out.weight [4, 32], fc1.bias [32], ...
//   reloaded into a new model: test accuracy 0.9950 (the run's: 0.9950)
#include "actors/run_job.hpp"
#include "core/data/data_source.hpp"
#include "core/io/weights_file.hpp"
#include "core/model/model_builder.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <cstdio>
#include <map>
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

// Normalize both splits with the training set's mean and standard deviation, as troupe's own
// data sets are; whoever uses the saved weights must apply the same two figures to new inputs.
void normalize(troupe::dataset& data) {
  const auto mean = data.train.images.mean().item<double>();
  const auto std = data.train.images.std().item<double>();
  data.train.images = (data.train.images - mean) / std;
  data.test.images = (data.test.images - mean) / std;
}

std::string shape_of(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d)
    s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

}  // namespace

int main(int argc, char** argv) {
  const std::string weights_path = argc > 1 ? argv[1] : "own_data_weights.pt";

  auto gen = at::detail::createCPUGenerator(/*seed_in=*/7);
  auto data = std::make_shared<troupe::dataset>();
  data->description = "quadrants (3000 train, 600 test)";
  data->classes = 4;
  data->train = make_quadrants(3000, gen);
  data->test = make_quadrants(600, gen);
  normalize(*data);
  std::printf(
      "own data: %ld train, %ld test, %ld classes (the quadrant holding a faint bright "
      "square)\n",
      static_cast<long>(data->train.size()), static_cast<long>(data->test.size()),
      static_cast<long>(data->classes));

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
  options.on_progress = [](const troupe::progress_update& p) {
    // Evaluations (p.evaluation) repeat the step they follow; report each step once.
    if (!p.evaluation && (p.step % 46 == 0 || p.step == p.total_steps))
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
  const auto predicted = model->forward(data->test.images).argmax(1);
  const auto accuracy = predicted.eq(data->test.labels).to(at::kDouble).mean().item<double>();
  std::printf("reloaded into a new model: test accuracy %.4f (the run's: %.4f)\n", accuracy,
              report.test_accuracy.value_or(0));
  return 0;
}
