#include "core/model/model_builder.hpp"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

#include <fmt/format.h>

#include <stdexcept>

namespace troupe {
namespace {

// Through AnyModule so that the named, non-template push_back overload is the one chosen.
template <class Module>
void append(torch::nn::Sequential& seq, const std::string& name, Module module) {
  seq->push_back(name, torch::nn::AnyModule(std::move(module)));
}

void add_activation(torch::nn::Sequential& seq, activation_kind kind, const std::string& name) {
  switch (kind) {
    case activation_kind::relu:
      append(seq, name, torch::nn::ReLU());
      return;
    case activation_kind::tanh:
      append(seq, name, torch::nn::Tanh());
      return;
    case activation_kind::gelu:
      append(seq, name, torch::nn::GELU());
      return;
  }
  throw std::logic_error("unknown activation kind");
}

// Hidden fully connected layers fc1..fcK with activations act1..actK, then "out".
void add_classifier(torch::nn::Sequential& seq, const model_config& config, int64_t in_features,
                    int64_t classes, int first_index) {
  int index = first_index;
  for (int64_t width : config.hidden) {
    const auto suffix = std::to_string(index++);
    append(seq, "fc" + suffix, torch::nn::Linear(in_features, width));
    add_activation(seq, config.activation, "act" + suffix);
    in_features = width;
  }
  append(seq, "out", torch::nn::Linear(in_features, classes));
}

int64_t values_in(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (auto d : shape)
    n *= d;
  return n;
}

}  // namespace

std::string input_problem(const model_config& config) {
  const auto& in = config.input_shape;
  if (config.kind != model_kind::cnn)
    return "";
  const auto shape = fmt::format("[{}]", fmt::join(in, ", "));
  if (in.size() != 3)
    return fmt::format(
        "the built-in cnn takes images as rows of [channels, height, width], the "
        "data's rows are {}",
        shape);
  const int64_t smallest = int64_t{1} << config.channels.size();
  if (in[1] < smallest || in[2] < smallest)
    return fmt::format(
        "the built-in cnn's {} 2x2 pools need images of at least {}x{}, the "
        "data's rows are {}",
        config.channels.size(), smallest, smallest, shape);
  return "";
}

torch::nn::Sequential build_model(const model_config& config, int64_t classes) {
  if (config.kind == model_kind::mlp) {
    torch::nn::Sequential mlp;
    append(mlp, "flatten", torch::nn::Flatten());
    add_classifier(mlp, config, values_in(config.input_shape), classes, 1);
    return mlp;
  }
  // cnn: blocks of conv (same padding), activation, 2x2 max-pool, then the classifier.
  if (const auto problem = input_problem(config); !problem.empty())
    throw std::invalid_argument(problem);
  torch::nn::Sequential cnn;
  int64_t in_channels = config.input_shape[0];
  int64_t height = config.input_shape[1];
  int64_t width = config.input_shape[2];
  int index = 1;
  for (int64_t channels : config.channels) {
    const auto suffix = std::to_string(index++);
    auto options = torch::nn::Conv2dOptions(in_channels, channels, config.kernel_size)
                       .padding(config.kernel_size / 2);
    append(cnn, "conv" + suffix, torch::nn::Conv2d(options));
    add_activation(cnn, config.activation, "cact" + suffix);
    append(cnn, "pool" + suffix, torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)));
    in_channels = channels;
    height /= 2;
    width /= 2;
  }
  append(cnn, "flatten", torch::nn::Flatten());
  add_classifier(cnn, config, in_channels * height * width, classes, 1);
  return cnn;
}

int64_t activation_values_per_row(torch::nn::Sequential model,
                                  const std::vector<int64_t>& row_shape) {
  at::NoGradGuard no_gradients;
  std::vector<int64_t> shape{1};
  shape.insert(shape.end(), row_shape.begin(), row_shape.end());
  auto x = at::zeros(shape);
  int64_t values = 0;
  for (auto& layer : *model) {
    x = layer.forward(x);
    values += x.numel();
  }
  return values;
}

std::vector<layer_summary> summarize_layers(const torch::nn::Sequential& model) {
  std::vector<layer_summary> rows;
  for (const auto& child : model->named_children()) {
    int64_t params = 0;
    for (const auto& p : child.value()->parameters())
      params += p.numel();
    // "torch::nn::LinearImpl" -> "Linear": the PyTorch class name users know.
    std::string kind = child.value()->name();
    if (kind.rfind("torch::nn::", 0) == 0)
      kind = kind.substr(11);
    if (kind.size() > 4 && kind.compare(kind.size() - 4, 4, "Impl") == 0)
      kind.resize(kind.size() - 4);
    rows.push_back({child.key(), kind, params});
  }
  return rows;
}

double parameters_of(const model_config& config, int64_t classes) {
  double total = 0;
  double features = 1;
  for (auto d : config.input_shape)
    features *= static_cast<double>(d);
  if (config.kind == model_kind::cnn && input_problem(config).empty()) {
    double channels = static_cast<double>(config.input_shape[0]);
    int64_t height = config.input_shape[1];
    int64_t width = config.input_shape[2];
    const auto k = static_cast<double>(config.kernel_size);
    for (int64_t out : config.channels) {
      total += (channels * k * k + 1) * static_cast<double>(out);  // weight and bias
      channels = static_cast<double>(out);
      height /= 2;
      width /= 2;
    }
    features = channels * static_cast<double>(height * width);
  }
  for (int64_t width : config.hidden) {
    total += (features + 1) * static_cast<double>(width);
    features = static_cast<double>(width);
  }
  return total + (features + 1) * static_cast<double>(classes);
}

int64_t count_parameters(const torch::nn::Sequential& model) {
  int64_t total = 0;
  for (const auto& p : model->parameters())
    total += p.numel();
  return total;
}

}  // namespace troupe
