// Builds the network a job describes as an ordered list of named layers (a torch::nn::Sequential
// whose children carry explicit names). The names are chosen so that parameter names equal
// PyTorch's state_dict keys for the same module tree built in Python as
// nn.Sequential(OrderedDict([...])), e.g. "fc1.weight", "conv2.bias", "out.weight"; a later
// pipeline split cuts this list into consecutive slices without renaming anything.
#pragma once

#include "core/job/job_config.hpp"

#include <torch/nn/modules/container/sequential.h>

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

/// Fashion-MNIST's images are 1 x 28 x 28.
inline constexpr int64_t image_side = 28;

/// The layers `config` describes for rows of config.input_shape, with one output per class (or
/// per float target value).
torch::nn::Sequential build_model(const model_config& config, int64_t classes);

/// Why the built-in model of `config` cannot take rows of config.input_shape (the CNN needs
/// [channels, height, width] rows large enough for its pools), or "" when it can.
std::string input_problem(const model_config& config);

/// One row of the plan: a layer's name, what it is, and how many parameters it owns.
struct layer_summary {
  std::string name;
  std::string kind;
  int64_t parameters = 0;
  int64_t buffer_values = 0;  ///< BatchNorm statistics and the like (TorchScript modules only)
};

std::vector<layer_summary> summarize_layers(const torch::nn::Sequential& model);
int64_t count_parameters(const torch::nn::Sequential& model);

/// The values every layer outputs for one input row of `row_shape`, summed: what a training
/// step holds per row between its forward and its backward. Measured by one row through the
/// layers, without gradients.
int64_t activation_values_per_row(torch::nn::Sequential model,
                                  const std::vector<int64_t>& row_shape);

/// The parameters build_model(config, classes) would hold, counted without building it (in a
/// double: a hostile job may ask for more than an int64 holds), so that a job asking for more
/// weights than a machine can hold is refused before anything is allocated.
double parameters_of(const model_config& config, int64_t classes);

}  // namespace troupe
