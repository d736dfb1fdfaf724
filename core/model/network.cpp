#include "core/model/network.hpp"

#include "core/io/archive_check.hpp"
#include "core/io/archive_storages.hpp"
#include "core/io/physical_memory.hpp"
#include "core/io/whole_file.hpp"
#include "core/model/script_init.hpp"
#include "core/model/script_layers.hpp"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/csrc/jit/serialization/import.h>

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

namespace troupe {
namespace {

// The first line that says something: TorchScript's compile errors begin with a newline.
std::string first_line(const std::string& text) {
  const auto start = text.find_first_not_of(" \n");
  if (start == std::string::npos)
    return "";
  return text.substr(start, text.find('\n', start) - start);
}

// Why LibTorch could not load a module, in one line: its message's first, or for an operator
// it lacks (a custom op registered in Python), which one.
std::string load_failure(const std::string& path, const std::string& message,
                         const std::string& hint) {
  const auto line = first_line(message);
  const std::string unknown = "Unknown builtin op: ";
  if (line.rfind(unknown, 0) == 0) {
    auto op = line.substr(unknown.size());
    if (!op.empty() && op.back() == '.')
      op.pop_back();
    return path + ": uses operator " + op +
           ", which this LibTorch does not have (a custom operator, registered in Python: "
           "troupe trains models made of LibTorch's own operators)";
  }
  return path + ": LibTorch cannot read it as a TorchScript module (" + line + ")" + hint;
}

// LibTorch 1.13 builds a tensor over whatever storage the archive names, even one shorter than
// the tensor's shape and strides reach (it then reads past it on first use).
bool inside_its_storage(const at::Tensor& t) {
  if (t.numel() == 0)
    return true;
  int64_t last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d)
    last += (t.size(d) - 1) * t.stride(d);
  return t.storage_offset() >= 0 &&
         static_cast<uint64_t>(last + 1) * t.element_size() <= t.storage().nbytes();
}

// A tensor reached under two names (a module used twice: tied weights) would get a slice of
// the flat weights per name, and only the last would train; refused, naming both.
void check_once(std::map<const void*, std::string>& seen, const at::Tensor& t,
                const std::string& name, const char* kind, const std::string& path) {
  const auto [it, first] = seen.emplace(t.unsafeGetTensorImpl(), name);
  if (!first)
    throw model_file_error(fmt::format(
        "{}: {} {} and {} are one tensor (a module used twice); troupe trains a tensor under "
        "one name: give each use a module of its own",
        path, kind, it->second, name));
}

void check_loaded(const torch::jit::Module& m, const std::string& path) {
  if (!m.find_method("forward"))
    throw model_file_error(path + ": the module has no forward method");
  int64_t count = 0;
  std::map<const void*, std::string> seen;
  for (const auto& p : m.named_parameters()) {
    check_once(seen, p.value, p.name, "parameters", path);
    if (!inside_its_storage(p.value))
      throw model_file_error(path + ": parameter " + p.name +
                             " reaches past the bytes stored for it");
    if (p.value.scalar_type() != at::kFloat)
      throw model_file_error(fmt::format(
          "{}: parameter {} is {}; troupe trains float32 parameters (call .float() on the "
          "module before saving it)",
          path, p.name, c10::toString(p.value.scalar_type())));
    if (!p.value.requires_grad())
      throw model_file_error(path + ": parameter " + p.name +
                             " does not require gradients; frozen parameters are not supported "
                             "(register it as a buffer instead)");
    ++count;
  }
  if (count == 0)
    throw model_file_error(path + ": the module has no parameters to train");
  for (const auto& b : m.named_buffers()) {
    check_once(seen, b.value, b.name, "buffers", path);
    if (!inside_its_storage(b.value))
      throw model_file_error(path + ": buffer " + b.name + " reaches past the bytes stored for it");
    if (b.value.scalar_type() != at::kFloat && b.value.scalar_type() != at::kLong)
      throw model_file_error(fmt::format("{}: buffer {} is {}; buffers must be float32 or int64",
                                         path, b.name, c10::toString(b.value.scalar_type())));
  }
}

std::shared_ptr<torch::jit::Module> load_script(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_whole_file(path);
  } catch (const std::runtime_error&) {
    throw model_file_error(path + ": cannot be opened (no such file, or not readable)");
  }
  const std::string hint =
      "; write it from Python with torch.jit.script(model).save(path) or "
      "torch.jit.trace(model, example).save(path)";
  if (const auto problem = archive_problem(bytes); !problem.empty())
    throw model_file_error(path + ": not a TorchScript archive (" + problem + ")" + hint);
  if (const auto problem = script_archive_problem(bytes, physical_memory_bytes()); !problem.empty())
    throw model_file_error(path + ": " + problem);
  std::shared_ptr<torch::jit::Module> module;
  try {
    std::istringstream stream(bytes);
    module = std::make_shared<torch::jit::Module>(torch::jit::load(stream, c10::Device(at::kCPU)));
  } catch (const c10::Error& e) {
    throw model_file_error(load_failure(path, e.what_without_backtrace(), hint));
  } catch (const std::exception& e) {
    throw model_file_error(load_failure(path, e.what(), hint));
  }
  check_loaded(*module, path);
  return module;
}

}  // namespace

network::network(const model_config& config, int64_t classes) {
  if (config.kind == model_kind::torchscript)
    script_ = load_script(config.path);
  else
    builtin_ = build_model(config, classes);
}

network::network(torch::nn::Sequential layers) : builtin_(std::move(layers)) {}

network::~network() = default;
network::network(network&&) noexcept = default;
network& network::operator=(network&&) noexcept = default;

namespace {

at::Tensor script_forward(torch::jit::Module& module, const at::Tensor& input) {
  // The module's operators run one by one as the built-in models' do, autograd recording them,
  // instead of the profiling executor's specialized graphs with their own differentiation: a
  // training step of the scripted MLP took 5-20% longer that way (bench/script_model.py), and
  // the arithmetic is eager LibTorch's. The flag is per thread, hence set at every call.
  torch::jit::GraphOptimizerEnabledGuard eager_operators(false);
  auto out = module.forward({input});
  TORCH_CHECK(out.isTensor(), "the TorchScript module's forward returned ", out.tagKind(),
              ", not a tensor");
  return out.toTensor();
}

void add_named(named_tensors& out, const std::string& prefix,
               const torch::jit::named_parameter_list& list) {
  for (const auto& p : list)
    out.emplace_back(prefix + p.name, p.value);
}

void add_named(named_tensors& out, const std::string& prefix,
               const torch::jit::named_buffer_list& list) {
  for (const auto& b : list)
    out.emplace_back(prefix + b.name, b.value);
}

}  // namespace

at::Tensor network::forward(const at::Tensor& input) {
  if (!script_)
    return builtin_->forward(input);
  if (children_.empty())
    return script_forward(*script_, input);
  auto x = input;
  for (auto& child : children_)
    x = script_forward(child.second, x);
  return x;
}

bool network::is_sequential() const {
  return !script_ || !children_.empty() || script_kind(*script_) == "Sequential";
}

network network::slice(int64_t begin, int64_t end) const {
  TORCH_CHECK(is_sequential() && children_.empty(), "network::slice needs a whole Sequential");
  network part;
  if (!script_) {
    part.builtin_ = torch::nn::Sequential();
    const auto names = builtin_->named_children();
    for (auto i = begin; i < end; ++i)
      part.builtin_->push_back(names[static_cast<std::size_t>(i)].key(),
                               *(builtin_->begin() + static_cast<std::ptrdiff_t>(i)));
    return part;
  }
  part.script_ = script_;
  int64_t i = 0;
  for (const auto& child : script_->named_children()) {
    if (i >= begin && i < end)
      part.children_.emplace_back(child.name, child.value);
    ++i;
  }
  return part;
}

int64_t network::child_count() const {
  if (!script_)
    return static_cast<int64_t>(builtin_->size());
  return static_cast<int64_t>(children_.empty() ? script_->named_children().size()
                                                : children_.size());
}

at::Tensor network::forward_child(int64_t index, const at::Tensor& input) {
  if (!script_)
    return (builtin_->begin() + static_cast<std::ptrdiff_t>(index))->forward(input);
  if (!children_.empty())
    return script_forward(children_[static_cast<std::size_t>(index)].second, input);
  int64_t i = 0;
  for (const auto& child : script_->named_children())
    if (i++ == index) {
      auto module = child.value;
      return script_forward(module, input);
    }
  TORCH_CHECK(false, "network has no child ", index);
}

named_tensors network::named_parameters() const {
  named_tensors out;
  if (!children_.empty()) {
    for (const auto& [name, child] : children_)
      add_named(out, name + ".", child.named_parameters());
  } else if (script_) {
    add_named(out, "", script_->named_parameters());
  } else {
    for (const auto& p : builtin_->named_parameters())
      out.emplace_back(p.key(), p.value());
  }
  return out;
}

named_tensors network::named_buffers() const {
  named_tensors out;
  if (!children_.empty()) {
    for (const auto& [name, child] : children_)
      add_named(out, name + ".", child.named_buffers());
  } else if (script_) {
    add_named(out, "", script_->named_buffers());
  } else {
    for (const auto& b : builtin_->named_buffers())
      out.emplace_back(b.key(), b.value());
  }
  return out;
}

std::vector<at::Tensor> network::parameters() const {
  std::vector<at::Tensor> out;
  for (auto& p : named_parameters())
    out.push_back(std::move(p.second));
  return out;
}

void network::set_training(bool on) {
  if (!children_.empty())
    for (auto& child : children_)
      child.second.train(on);
  else if (script_)
    script_->train(on);
  else
    builtin_->train(on);
}

void network::reinitialize_from_seed(const std::string& what) {
  if (script_)
    troupe::reinitialize_from_seed(*script_, what);
}

void network::to(c10::Device device) {
  if (!children_.empty())
    for (auto& child : children_)
      child.second.to(device);
  else if (script_)
    script_->to(device);
  else
    builtin_->to(device);
}

torch::nn::Sequential network::stackable_layers(const std::string& what) const {
  TORCH_CHECK(script_ && children_.empty(), "stackable_layers: needs a whole TorchScript module");
  return troupe::stackable_layers(*script_, what);
}

std::vector<layer_summary> network::layers() const {
  if (!script_)
    return summarize_layers(builtin_);
  std::vector<layer_summary> rows;
  for (const auto& child : script_->named_children()) {
    int64_t params = 0;
    for (const auto& p : child.value.parameters())
      params += p.numel();
    int64_t buffers = 0;
    for (const auto& b : child.value.buffers())
      buffers += b.numel();
    rows.push_back({child.name, script_kind(child.value), params, buffers});
  }
  return rows;
}

namespace {

// The operators that draw from LibTorch's generator when none is passed (which TorchScript
// cannot pass): dropout in all its forms, and the random tensor factories and fills.
const std::set<std::string>& random_op_names() {
  static const std::set<std::string> names{"aten::dropout",
                                           "aten::dropout_",
                                           "aten::feature_dropout",
                                           "aten::feature_dropout_",
                                           "aten::alpha_dropout",
                                           "aten::alpha_dropout_",
                                           "aten::feature_alpha_dropout",
                                           "aten::feature_alpha_dropout_",
                                           "aten::native_dropout",
                                           "aten::bernoulli",
                                           "aten::bernoulli_",
                                           "aten::rand",
                                           "aten::rand_like",
                                           "aten::randn",
                                           "aten::randn_like",
                                           "aten::randint",
                                           "aten::randint_like",
                                           "aten::randperm",
                                           "aten::normal",
                                           "aten::normal_",
                                           "aten::uniform_",
                                           "aten::multinomial",
                                           "aten::rrelu",
                                           "aten::rrelu_",
                                           "aten::rrelu_with_noise",
                                           "aten::exponential_",
                                           "aten::geometric_",
                                           "aten::cauchy_",
                                           "aten::log_normal_",
                                           "aten::poisson",
                                           "aten::random_"};
  return names;
}

void collect_random_ops(torch::jit::Block* block, std::set<std::string>& found) {
  for (auto* node : block->nodes()) {
    const std::string kind = node->kind().toQualString();
    if (random_op_names().count(kind) > 0)
      found.insert(kind);
    for (auto* inner : node->blocks())
      collect_random_ops(inner, found);
  }
}

// Every random operator a module's forward can reach: its graph with every call inlined.
void add_random_ops(const torch::jit::Module& module, std::set<std::string>& found) {
  auto graph = module.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  collect_random_ops(graph->block(), found);
}

}  // namespace

std::vector<std::string> network::random_ops() const {
  std::set<std::string> found;
  if (!children_.empty())
    for (const auto& child : children_)
      add_random_ops(child.second, found);
  else if (script_)
    add_random_ops(*script_, found);
  return {found.begin(), found.end()};
}

std::string script_with_weights(const model_config& config, const at::Tensor& flat) {
  auto module = load_script(config.path);
  torch::NoGradGuard no_grad;
  const auto values = flat.to(at::kCPU);
  int64_t offset = 0;
  auto take = [&](at::Tensor target) {
    const auto n = target.numel();
    TORCH_CHECK(offset + n <= values.numel(), "script_with_weights: ", values.numel(),
                " values are too few for the module");
    auto slice = values.narrow(0, offset, n).view(target.sizes());
    target.copy_(target.is_floating_point() ? slice : slice.round());
    offset += n;
  };
  for (const auto& p : module->named_parameters())
    take(p.value);
  for (const auto& b : module->named_buffers())
    take(b.value);
  TORCH_CHECK(offset == values.numel(), "script_with_weights: ", values.numel(),
              " values for a module of ", offset);
  std::ostringstream out;
  module->save(out);
  return out.str();
}

}  // namespace troupe
