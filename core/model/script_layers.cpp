#include "core/model/script_layers.hpp"

#include "core/errors.hpp"

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

#include <fmt/format.h>

#include <optional>
#include <vector>

namespace troupe {
namespace {

const char* const stackable_kinds = "Linear, Conv2d, ReLU, Tanh, GELU, MaxPool2d and Flatten";

// One child being rebuilt; `refuse` names it in every problem.
struct child_reader {
  const torch::jit::Module& module;
  std::string name;
  std::string kind;
  std::string what;

  [[noreturn]] void refuse(const std::string& why) const {
    throw job_error(
        {fmt::format("/ensemble: {}: layer {} ({}) cannot be stacked: {}", what, name, kind, why)});
  }

  // A module's setting: TorchScript keeps nn's __constants__ on the class type.
  c10::IValue constant(const std::string& key) const {
    if (auto value = module.type()->findConstant(key))
      return *value;
    refuse("its " + key + " is not in the file (save it with torch.jit.script, not trace)");
  }

  // nn.Conv2d and nn.MaxPool2d keep a pair as a tuple, (1, 1); a list or one int is read too.
  std::vector<int64_t> pair(const std::string& key) const {
    const auto value = constant(key);
    if (value.isInt())
      return {value.toInt(), value.toInt()};
    std::vector<c10::IValue> items;
    if (value.isIntList())
      for (const auto v : value.toIntVector())
        items.emplace_back(v);
    else if (value.isTuple())
      for (const auto& v : value.toTupleRef().elements())
        items.push_back(v);
    if (items.size() == 2 && items[0].isInt() && items[1].isInt())
      return {items[0].toInt(), items[1].toInt()};
    refuse("its " + key + " is not one or two integers");
  }

  int64_t integer(const std::string& key) const {
    const auto value = constant(key);
    if (!value.isInt())
      refuse("its " + key + " is not an integer");
    return value.toInt();
  }

  at::Tensor parameter(const std::string& key) const {
    if (!module.hasattr(key) || !module.attr(key).isTensor())
      refuse("it has no " + key);
    return module.attr(key).toTensor();
  }

  torch::nn::AnyModule linear() const {
    const auto weight = parameter("weight");
    parameter("bias");  // the stacked linear layer adds a bias
    return torch::nn::AnyModule(torch::nn::Linear(weight.size(1), weight.size(0)));
  }

  torch::nn::AnyModule conv() const {
    const auto weight = parameter("weight");
    parameter("bias");
    const auto padding = constant("padding");
    if (padding.isString())
      refuse("its padding is \"" + padding.toStringRef() + "\"; give it as integers");
    const auto pad = pair("padding");
    if (pair("stride") != std::vector<int64_t>{1, 1} ||
        pair("dilation") != std::vector<int64_t>{1, 1} || integer("groups") != 1 ||
        constant("padding_mode").toStringRef() != "zeros" || pad[0] != pad[1])
      refuse(
          "the stacked convolution takes stride 1, dilation 1, groups 1 and the same zero "
          "padding on every side");
    auto options =
        torch::nn::Conv2dOptions(weight.size(1), weight.size(0), {weight.size(2), weight.size(3)})
            .padding(pad[0]);
    return torch::nn::AnyModule(torch::nn::Conv2d(options));
  }

  torch::nn::AnyModule max_pool() const {
    if (constant("return_indices").toBool())
      refuse("it returns indices");
    const auto kernel = pair("kernel_size");
    const auto stride = pair("stride");
    const auto padding = pair("padding");
    const auto dilation = pair("dilation");
    auto options = torch::nn::MaxPool2dOptions({kernel[0], kernel[1]})
                       .stride({stride[0], stride[1]})
                       .padding({padding[0], padding[1]})
                       .dilation({dilation[0], dilation[1]})
                       .ceil_mode(constant("ceil_mode").toBool());
    return torch::nn::AnyModule(torch::nn::MaxPool2d(options));
  }

  torch::nn::AnyModule flatten() const {
    if (integer("start_dim") != 1 || integer("end_dim") != -1)
      refuse("the stacked model flattens from dimension 1 to the last");
    return torch::nn::AnyModule(torch::nn::Flatten());
  }

  torch::nn::AnyModule gelu() const {
    if (constant("approximate").toStringRef() != "none")
      refuse("the stacked model computes the exact GELU, not approximate=\"tanh\"");
    return torch::nn::AnyModule(torch::nn::GELU());
  }

  torch::nn::AnyModule rebuilt() const {
    if (kind == "Linear")
      return linear();
    if (kind == "Conv2d")
      return conv();
    if (kind == "MaxPool2d")
      return max_pool();
    if (kind == "Flatten")
      return flatten();
    if (kind == "GELU")
      return gelu();
    if (kind == "ReLU")
      return torch::nn::AnyModule(torch::nn::ReLU());
    if (kind == "Tanh")
      return torch::nn::AnyModule(torch::nn::Tanh());
    refuse(std::string("stackable kinds are ") + stackable_kinds);
  }
};

}  // namespace

torch::nn::Sequential stackable_layers(const torch::jit::Module& sequential,
                                       const std::string& what) {
  if (script_kind(sequential) != "Sequential")
    throw job_error({"/ensemble: " + what +
                     ": a stacked ensemble stacks the children of an nn.Sequential; this "
                     "module's forward is its own code"});
  if (sequential.named_buffers().size() > 0)
    throw job_error({"/ensemble: " + what +
                     ": the module has buffers (BatchNorm statistics?); stackable kinds are " +
                     stackable_kinds});
  torch::nn::Sequential layers;
  for (const auto& child : sequential.named_children()) {
    const child_reader reader{child.value, child.name, script_kind(child.value), what};
    layers->push_back(child.name, reader.rebuilt());
  }
  return layers;
}

std::string script_kind(const torch::jit::Module& m) {
  const auto name = m.type()->name();
  return name ? name->name() : std::string("module");
}

}  // namespace troupe
