// The model a worker trains: the built-in layers of core/model/model_builder, or a TorchScript
// module the user saved from Python (`"model": {"type": "torchscript", "path": ...}`). The
// engines see one interface (forward, parameters, buffers, training or evaluation mode), so every
// policy trains either kind the same way.
//
// A TorchScript file is checked before LibTorch reads it (the zip container, core/io/
// archive_check) and after (every parameter and buffer inside the bytes stored for it, float32
// parameters that train, float32 or int64 buffers): a file that fails throws model_file_error
// naming the file and what is wrong, never a crash.
//
// Thread safety: none; each worker owns its own network (a TorchScript file is loaded once per
// worker, so no two workers share a parameter).
#pragma once

#include "core/job/job_config.hpp"
#include "core/model/flat_parameters.hpp"
#include "core/model/model_builder.hpp"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/nn/modules/container/sequential.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace troupe {

/// A TorchScript file that cannot be trained. The message begins with the file's path.
class model_file_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class network {
 public:
  /// Builds the built-in layers of `config` (with LibTorch's global generator: seed it first),
  /// or loads its TorchScript file with the weights saved in it.
  network(const model_config& config, int64_t classes);
  /// The built-in layers already built.
  explicit network(torch::nn::Sequential layers);
  ~network();
  network(network&&) noexcept;
  network& operator=(network&&) noexcept;

  bool is_script() const { return script_ != nullptr; }
  /// Whether the top-level children, applied in order, are the whole forward (the built-in
  /// layers, a scripted nn.Sequential): what a pipeline split needs.
  bool is_sequential() const;

  /// The top-level children [begin, end) as a network of their own, sharing their parameters
  /// with this one (which may then be dropped): a pipeline stage. Needs is_sequential().
  network slice(int64_t begin, int64_t end) const;
  /// One top-level child's forward, for the plan's walk through the layers.
  int64_t child_count() const;
  at::Tensor forward_child(int64_t index, const at::Tensor& input);

  at::Tensor forward(const at::Tensor& input);
  named_tensors named_parameters() const;
  named_tensors named_buffers() const;
  std::vector<at::Tensor> parameters() const;
  /// Training mode (batch statistics, dropout) or evaluation mode.
  void set_training(bool on);
  void to(c10::Device device);
  /// model.init "seed": a TorchScript module's parameters drawn again from LibTorch's global
  /// generator (core/model/script_init; seed it first); the built-in layers already are. Throws
  /// job_error for a layer kind without PyTorch's rule; `what` names the file.
  void reinitialize_from_seed(const std::string& what);

  /// A scripted nn.Sequential's children rebuilt as built-in layers, freshly initialized
  /// (core/model/script_layers); the built-in layers cloned, freshly initialized. Throws
  /// job_error naming a layer a stacked ensemble cannot stack; `what` names the file.
  torch::nn::Sequential stackable_layers(const std::string& what) const;

  /// The top-level children, for the plan.
  std::vector<layer_summary> layers() const;
  /// The random operators (aten::dropout, aten::rand, ...) its forward can reach, found in the
  /// TorchScript graph with every call inlined; none for the built-in layers. A forward that
  /// draws runs under core/model/random_draws.
  std::vector<std::string> random_ops() const;

 private:
  network() = default;

  torch::nn::Sequential builtin_{nullptr};
  /// The loaded module, shared by the slices cut from it.
  std::shared_ptr<torch::jit::Module> script_;
  /// A slice of a scripted Sequential: its children, in order (empty: the whole module).
  std::vector<std::pair<std::string, torch::jit::Module>> children_;
};

/// Loads the TorchScript file of `config`, puts the flat weights (parameters then buffers, in
/// the order flat_parameters lays them out) into it, and returns the module as the bytes of a
/// file that Python's torch.jit.load reads.
std::string script_with_weights(const model_config& config, const at::Tensor& flat);

}  // namespace troupe
