#include "core/checkpoint/run_checkpoint.hpp"

#include "core/checkpoint/sha256.hpp"
#include "core/io/pickled_tensors.hpp"
#include "core/io/shallow_json.hpp"
#include "core/io/weights_file.hpp"
#include "core/model/flat_parameters.hpp"
#include "core/optim/make_optimizer.hpp"
#include "core/pipeline/stage_weights.hpp"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>

#include <stdexcept>

namespace troupe {
namespace {

std::string pickled(const c10::Dict<std::string, at::Tensor>& dict) {
  const auto bytes = weights_archive(dict);
  return std::string(bytes.data(), bytes.size());
}

c10::Dict<std::string, at::Tensor> unpickled(const std::string& bytes, const char* name) {
  return read_pickled_tensors(bytes, name);
}

// A view of `s`, not a copy: it is pickled before `s` (in the checkpoint encoded) goes away.
at::Tensor as_bytes(const std::string& s) {
  return at::from_blob(const_cast<char*>(s.data()), {static_cast<int64_t>(s.size())}, at::kByte);
}

std::string from_bytes(const at::Tensor& t) {
  const auto c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), static_cast<std::size_t>(c.numel()));
}

// What decode hands on is copied into the workers' flat buffers: anything but a contiguous 1-D
// tensor of the expected type whose storage holds it (LibTorch's unpickler takes a tensor's
// sizes and offset as the archive states them, beside a storage of any length) is refused here,
// by name, rather than read past its storage deep inside a worker.
const at::Tensor& flat_of(const at::Tensor& t, at::ScalarType type, const std::string& name) {
  const auto refuse = [&] {
    throw std::runtime_error("state.pt: " + name + " is not a 1-D tensor of " +
                             c10::toString(type) + " within its storage");
  };
  if (!t.defined() || t.dim() != 1 || t.scalar_type() != type || !t.is_contiguous() ||
      !t.has_storage() || t.storage_offset() < 0)
    refuse();
  const auto values = static_cast<uint64_t>(t.storage_offset()) + static_cast<uint64_t>(t.numel());
  const auto size = static_cast<uint64_t>(t.element_size());
  if (values > t.storage().nbytes() / size)
    refuse();
  return t;
}
const at::Tensor& flat_floats(const at::Tensor& t, const std::string& name) {
  return flat_of(t, at::kFloat, name);
}
const at::Tensor& flat_bytes(const at::Tensor& t, const std::string& name) {
  return flat_of(t, at::kByte, name);
}

std::string key(int64_t part, const char* what) {
  return "part" + std::to_string(part) + "/" + what;
}

const std::string& required(const stored_checkpoint& s, const char* name) {
  const auto* bytes = s.find(name);
  if (bytes == nullptr)
    throw std::runtime_error(std::string("no ") + name);
  return *bytes;
}

}  // namespace

stored_checkpoint encode_checkpoint(const run_checkpoint& c, int64_t stages,
                                    const parameter_layout& layout,
                                    const std::vector<int64_t>& stage_parameters) {
  c10::Dict<std::string, at::Tensor> state;
  std::vector<at::Tensor> stage_weights;
  for (const auto& p : c.parts) {
    state.insert(key(p.part, "weights"), p.weights.contiguous());
    state.insert(key(p.part, "optimizer"), as_bytes(p.optimizer));
    stage_weights.push_back(p.weights);
  }
  if (c.best_weights.defined())
    state.insert("best_weights", c.best_weights.contiguous());
  if (c.outer_base.defined())
    state.insert("outer_base", c.outer_base.contiguous());
  if (c.outer_momentum.defined())
    state.insert("outer_momentum", c.outer_momentum.contiguous());
  if (c.average_base.defined())
    state.insert("average_base", c.average_base.contiguous());
  stored_checkpoint s;
  s.step = c.step;
  s.job_sha256 = job_digest(c.job);
  const nlohmann::json meta = {
      {"step", c.step}, {"job", c.job}, {"progress", c.progress}, {"parts", c.parts.size()}};
  s.files.push_back({"state.json", meta.dump(2) + "\n"});
  s.files.push_back({"state.pt", pickled(state)});
  if (!layout.empty() && !c.parts.empty()) {
    const auto model = stages > 1 ? model_weights_of_stages(stage_weights, stage_parameters)
                                  : c.parts.front().weights;
    c10::Dict<std::string, at::Tensor> named;
    for (const auto& [name, tensor] : unflatten(model, layout))
      named.insert(name, tensor.contiguous());
    s.files.push_back({"weights.pt", pickled(named)});
  }
  return s;
}

run_checkpoint decode_checkpoint(const stored_checkpoint& stored) {
  run_checkpoint c;
  const auto meta = parse_shallow_json(required(stored, "state.json"));
  if (meta.is_discarded())
    throw std::runtime_error("state.json: not JSON, or nested too deep");
  c.step = meta.at("step").get<int64_t>();
  if (c.step != stored.step)
    throw std::runtime_error("state.json names step " + std::to_string(c.step) +
                             ", its manifest step " + std::to_string(stored.step));
  c.job = meta.at("job");
  if (!stored.job_sha256.empty() && job_digest(c.job) != stored.job_sha256)
    throw std::runtime_error("state.json's job is not the one its manifest names");
  c.progress = meta.at("progress");
  const auto state = unpickled(required(stored, "state.pt"), "state.pt");
  const auto parts = meta.at("parts").get<int64_t>();
  if (parts < 0 || parts > static_cast<int64_t>(state.size()))
    throw std::runtime_error("state.json names " + std::to_string(parts) + " parts");
  for (int64_t p = 0; p < parts; ++p) {
    if (!state.contains(key(p, "weights")) || !state.contains(key(p, "optimizer")))
      throw std::runtime_error("state.pt lacks part " + std::to_string(p));
    auto optimizer = from_bytes(flat_bytes(state.at(key(p, "optimizer")), key(p, "optimizer")));
    if (const auto problem = optimizer_state_problem(optimizer);
        !optimizer.empty() && !problem.empty())
      throw std::runtime_error("state.pt: " + key(p, "optimizer") + ": " + problem);
    c.parts.push_back(
        {p, flat_floats(state.at(key(p, "weights")), key(p, "weights")), std::move(optimizer)});
  }
  if (state.contains("best_weights"))
    c.best_weights = flat_floats(state.at("best_weights"), "best_weights");
  if (state.contains("outer_base"))
    c.outer_base = flat_floats(state.at("outer_base"), "outer_base");
  if (state.contains("outer_momentum"))
    c.outer_momentum = flat_floats(state.at("outer_momentum"), "outer_momentum");
  if (state.contains("average_base"))
    c.average_base = flat_floats(state.at("average_base"), "average_base");
  return c;
}

std::string job_digest(const nlohmann::json& job) {
  auto named = job;
  if (named.is_object() && named.contains("cluster") && named["cluster"].is_object())
    named["cluster"].erase("nodes");
  return sha256_hex(named.dump());
}

}  // namespace troupe
