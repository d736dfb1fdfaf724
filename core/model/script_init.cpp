#include "core/model/script_init.hpp"

#include "core/errors.hpp"
#include "core/model/script_layers.hpp"

#include <torch/csrc/autograd/grad_mode.h>
#include <torch/nn/init.h>

#include <cmath>
#include <set>
#include <string>
#include <tuple>

namespace troupe {
namespace {

// The module's own parameters (not its children's), by name.
at::Tensor own(const torch::jit::Module& m, const char* name) {
  if (!m.hasattr(name))
    return {};
  const auto value = m.attr(name);
  return value.isTensor() ? value.toTensor() : at::Tensor();
}

// A layer of a known kind whose tensors are not what that kind holds (a class of the user's
// that happens to share the name).
[[noreturn]] void refuse_layer(const std::string& name, const std::string& kind,
                               const std::string& what, const std::string& why) {
  throw job_error({"/model/init: \"seed\" cannot draw the parameters of " +
                   (name.empty() ? std::string("the top module") : name) + " (" + kind + ") in " +
                   what + ": " + why});
}

// nn.Linear and nn.ConvNd's reset_parameters.
void kaiming_layer(const torch::jit::Module& m, const std::string& name, const std::string& what) {
  auto weight = own(m, "weight");
  if (!weight.defined() || weight.dim() < 2)
    refuse_layer(name, script_kind(m), what, "it has no weight of two or more dimensions");
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (auto bias = own(m, "bias"); bias.defined()) {
    const auto fan_in = std::get<0>(torch::nn::init::_calculate_fan_in_and_fan_out(weight));
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    torch::nn::init::uniform_(bias, -bound, bound);
  }
}

// Norms: an affine weight of ones, a bias of zeros, and fresh running statistics.
void norm_layer(const torch::jit::Module& m) {
  if (auto weight = own(m, "weight"); weight.defined())
    weight.fill_(1);
  if (auto bias = own(m, "bias"); bias.defined())
    bias.zero_();
  if (auto mean = own(m, "running_mean"); mean.defined())
    mean.zero_();
  if (auto var = own(m, "running_var"); var.defined())
    var.fill_(1);
  if (auto tracked = own(m, "num_batches_tracked"); tracked.defined())
    tracked.zero_();
}

void embedding_layer(const torch::jit::Module& m, const std::string& name,
                     const std::string& what) {
  auto weight = own(m, "weight");
  if (!weight.defined() || weight.dim() != 2)
    refuse_layer(name, "Embedding", what, "its weight is not a matrix");
  weight.normal_(0, 1);
  if (m.hasattr("padding_idx")) {
    const auto padding = m.attr("padding_idx");
    if (!padding.isInt())
      return;
    const auto row = padding.toInt();
    if (row < 0 || row >= weight.size(0))
      refuse_layer(name, "Embedding", what,
                   "its padding_idx " + std::to_string(row) + " is not one of its " +
                       std::to_string(weight.size(0)) + " rows");
    weight[row].zero_();
  }
}

bool holds_parameters(const torch::jit::Module& m) {
  return m.parameters(/*recurse=*/false).size() > 0;
}

}  // namespace

void reinitialize_from_seed(torch::jit::Module& module, const std::string& what) {
  static const std::set<std::string> kaiming{"Linear",         "Conv1d",          "Conv2d",
                                             "Conv3d",         "ConvTranspose1d", "ConvTranspose2d",
                                             "ConvTranspose3d"};
  static const std::set<std::string> norms{"BatchNorm1d",    "BatchNorm2d",   "BatchNorm3d",
                                           "LayerNorm",      "GroupNorm",     "InstanceNorm1d",
                                           "InstanceNorm2d", "InstanceNorm3d"};
  torch::NoGradGuard no_grad;
  for (const auto& named : module.named_modules()) {
    const auto& m = named.value;
    const auto kind = script_kind(m);
    if (kaiming.count(kind) > 0)
      kaiming_layer(m, named.name, what);
    else if (norms.count(kind) > 0)
      norm_layer(m);
    else if (kind == "Embedding")
      embedding_layer(m, named.name, what);
    else if (holds_parameters(m))
      refuse_layer(named.name, kind, what,
                   "the layers with PyTorch's rules are Linear, Conv1d/2d/3d and their "
                   "transposes, BatchNorm, LayerNorm, GroupNorm, InstanceNorm and Embedding; use "
                   "\"saved\" to start from the file's weights");
  }
}

}  // namespace troupe
