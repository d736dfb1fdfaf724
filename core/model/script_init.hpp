// model.init "seed" for a TorchScript module: its parameters drawn again from LibTorch's global
// generator with the rules PyTorch's own layers use when they are built, so that a job's seed
// decides where your own model starts, as it does for the built-in models.
//
//   Linear, Conv1d/2d/3d (and their transposes)  weight kaiming_uniform(a = sqrt(5)), bias
//                                                uniform(+-1 / sqrt(fan_in))
//   BatchNorm1d/2d/3d, LayerNorm, GroupNorm      weight 1, bias 0; running mean 0, variance 1,
//                                                batches tracked 0
//   Embedding                                    weight normal(0, 1), the padding row 0
//
// Modules are visited in the order they were registered (nn.Sequential's order, or __init__'s),
// each drawing as its PyTorch class does, so a scripted module of these layers starts exactly
// where PyTorch builds it under the same torch.manual_seed. A module of any other kind that
// holds parameters of its own is refused by name: its start could not depend on the seed.
#pragma once

#include <torch/csrc/jit/api/module.h>

#include <string>

namespace troupe {

/// Draws every parameter of `module` again (see above). Throws job_error naming a module that
/// holds parameters of a kind without a rule; `what` names the file.
void reinitialize_from_seed(torch::jit::Module& module, const std::string& what);

}  // namespace troupe
