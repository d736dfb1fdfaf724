// A scripted nn.Sequential rebuilt as the built-in layers it is made of, for what needs those
// layers rather than a TorchScript module: the stacked ensemble (core/ensemble/stacked_model)
// trains K copies of an architecture as one wide model, and stacks only Linear, Conv2d (stride
// 1, symmetric zero padding), ReLU, Tanh, GELU, MaxPool2d and Flatten.
#pragma once

#include <torch/nn/modules/container/sequential.h>

#include <string>

namespace torch::jit {
struct Module;
}

namespace troupe {

/// A scripted module's class name without its module path: "__torch__.torch.nn.modules.linear.
/// Linear" -> "Linear", "__torch__.ResBlock" -> "ResBlock" ("module" for one without a name).
std::string script_kind(const torch::jit::Module& m);

/// The layers of `sequential`'s top-level children, same names and shapes, freshly initialized
/// as PyTorch initializes them (LibTorch's global generator: seed it first). Throws job_error
/// at "/ensemble" naming the first child that is no stackable layer, or whose settings are not
/// ones the stacked model computes (`what` names the file in the message).
torch::nn::Sequential stackable_layers(const torch::jit::Module& sequential,
                                       const std::string& what);

}  // namespace troupe
