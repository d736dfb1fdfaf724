#include "core/optim/optimizer_bytes.hpp"

#include "core/optim/optimizer_state_key.hpp"

#include <ATen/ATen.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace troupe {
namespace {

constexpr std::string_view magic = "troupe-optim-v1\n";
constexpr uint8_t sgd_kind = 0, adam_kind = 1, adamw_kind = 2, rmsprop_kind = 3;

const char* kind_name(uint8_t kind) {
  switch (kind) {
    case sgd_kind:
      return "sgd";
    case adam_kind:
      return "adam";
    case adamw_kind:
      return "adamw";
    default:
      return "rmsprop";
  }
}

// Per kind: the options stored as f64s, the tensors of a parameter's state, whether it holds a
// step count.
std::size_t option_count(uint8_t kind) {
  return kind == sgd_kind ? 4 : 5;
}
std::size_t tensor_count(uint8_t kind) {
  return kind == sgd_kind ? 1 : 3;
}
bool has_step(uint8_t kind) {
  return kind != sgd_kind;
}

uint8_t kind_of(const torch::optim::Optimizer& optimizer) {
  if (dynamic_cast<const torch::optim::SGD*>(&optimizer) != nullptr)
    return sgd_kind;
  if (dynamic_cast<const torch::optim::Adam*>(&optimizer) != nullptr)
    return adam_kind;
  if (dynamic_cast<const torch::optim::AdamW*>(&optimizer) != nullptr)
    return adamw_kind;
  if (dynamic_cast<const torch::optim::RMSprop*>(&optimizer) != nullptr)
    return rmsprop_kind;
  throw std::logic_error("optimizer bytes: only sgd, adam, adamw and rmsprop");
}

class writer {
 public:
  explicit writer(std::size_t reserve) { out_.reserve(reserve); }
  template <class T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  void tensor(const at::Tensor& t) {
    put<uint8_t>(t.defined());
    if (!t.defined())
      return;
    const auto cpu = t.to(at::kCPU).contiguous();
    put<uint8_t>(static_cast<uint8_t>(cpu.scalar_type()));
    put<uint64_t>(static_cast<uint64_t>(cpu.numel()));
    out_.append(static_cast<const char*>(cpu.data_ptr()), cpu.nbytes());
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what writer wrote, every length checked against what is left.
class reader {
 public:
  explicit reader(std::string_view bytes) : in_(bytes) {}
  template <class T>
  T get(const char* what) {
    T value;
    need(sizeof(T), what);
    std::memcpy(&value, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  void skip_magic() {
    if (in_.substr(0, magic.size()) != magic)
      throw std::runtime_error("not an optimizer state (no troupe-optim-v1 header)");
    at_ = magic.size();
  }
  // A tensor as stored: undefined, or a CPU tensor viewing the bytes (copied by the caller).
  at::Tensor tensor(const char* what) {
    if (get<uint8_t>(what) == 0)
      return at::Tensor();
    const auto type_code = get<uint8_t>(what);
    if (type_code >= static_cast<uint8_t>(at::ScalarType::NumOptions))
      throw std::runtime_error(std::string(what) + ": unknown element type " +
                               std::to_string(type_code));
    const auto type = static_cast<at::ScalarType>(type_code);
    const auto numel = get<uint64_t>(what);
    const auto size = c10::elementSize(type);
    if (numel > (in_.size() - at_) / size)
      throw std::runtime_error(std::string(what) + ": " + std::to_string(numel) +
                               " elements run past the end");
    const auto nbytes = static_cast<std::size_t>(numel) * size;
    auto t = at::from_blob(const_cast<char*>(in_.data() + at_), {static_cast<int64_t>(numel)},
                           at::TensorOptions().dtype(type));
    at_ += nbytes;
    return t;
  }
  bool done() const { return at_ == in_.size(); }

 private:
  void need(std::size_t n, const char* what) {
    if (in_.size() - at_ < n)
      throw std::runtime_error(std::string(what) + ": the state ends early");
  }
  std::string_view in_;
  std::size_t at_ = 0;
};

// The stored copy of a parameter's state tensor, shaped and placed as the parameter.
at::Tensor restored(const at::Tensor& stored, const at::Tensor& param, const std::string& what) {
  if (!stored.defined())
    return stored;
  if (stored.scalar_type() != param.scalar_type() || stored.numel() != param.numel())
    throw std::runtime_error(what + ": " + std::to_string(stored.numel()) + " " +
                             c10::toString(stored.scalar_type()) + " values for a parameter of " +
                             std::to_string(param.numel()) + " " +
                             c10::toString(param.scalar_type()));
  return stored.reshape(param.sizes()).to(param.device(), /*non_blocking=*/false, /*copy=*/true);
}

// What a state holds for one parameter, read before anything changes in the optimizer.
struct param_record {
  bool has_state = false;
  int64_t step = 0;
  std::vector<at::Tensor> tensors;
};

struct group_record {
  std::vector<double> options;
  bool flag = false;
  std::vector<param_record> params;
};

struct parsed_state {
  uint8_t kind = 0;
  std::vector<group_record> groups;
};

parsed_state parse(std::string_view bytes) {
  reader in(bytes);
  in.skip_magic();
  parsed_state s;
  s.kind = in.get<uint8_t>("the kind");
  if (s.kind > rmsprop_kind)
    throw std::runtime_error("unknown optimizer kind " + std::to_string(s.kind));
  const std::size_t options = option_count(s.kind);
  const std::size_t tensors = tensor_count(s.kind);
  const auto groups = in.get<uint64_t>("the group count");
  if (groups > bytes.size())
    throw std::runtime_error("a group count of " + std::to_string(groups));
  for (uint64_t g = 0; g < groups; ++g) {
    group_record group;
    for (std::size_t o = 0; o < options; ++o)
      group.options.push_back(in.get<double>("a group's options"));
    group.flag = in.get<uint8_t>("a group's options") != 0;
    const auto params = in.get<uint64_t>("a group's parameter count");
    if (params > bytes.size())
      throw std::runtime_error("a parameter count of " + std::to_string(params));
    for (uint64_t p = 0; p < params; ++p) {
      param_record record;
      record.has_state = in.get<uint8_t>("a parameter's state") != 0;
      if (record.has_state) {
        if (has_step(s.kind))
          record.step = in.get<int64_t>("a parameter's step");
        for (std::size_t t = 0; t < tensors; ++t)
          record.tensors.push_back(in.tensor("a parameter's state"));
      }
      group.params.push_back(std::move(record));
    }
    s.groups.push_back(std::move(group));
  }
  if (!in.done())
    throw std::runtime_error("bytes follow the last parameter's state");
  return s;
}

// Writes a parsed state back, byte for byte as save_optimizer_bytes would have.
std::string emit(const parsed_state& s) {
  std::size_t values = 0;
  for (const auto& g : s.groups)
    for (const auto& p : g.params)
      for (const auto& t : p.tensors)
        values += t.defined() ? t.nbytes() : 0;
  writer out(magic.size() + values + 4096);
  for (char c : magic)
    out.put<char>(c);
  out.put<uint8_t>(s.kind);
  out.put<uint64_t>(s.groups.size());
  for (const auto& g : s.groups) {
    for (double o : g.options)
      out.put<double>(o);
    out.put<uint8_t>(g.flag);
    out.put<uint64_t>(g.params.size());
    for (const auto& p : g.params) {
      out.put<uint8_t>(p.has_state);
      if (!p.has_state)
        continue;
      if (has_step(s.kind))
        out.put<int64_t>(p.step);
      for (const auto& t : p.tensors)
        out.tensor(t);
    }
  }
  return out.take();
}

parsed_state parse_one_group(std::string_view bytes) {
  auto s = parse(bytes);
  if (s.groups.size() != 1)
    throw std::runtime_error("a sharded server's optimizer state has one parameter group, not " +
                             std::to_string(s.groups.size()));
  return s;
}

template <class Options>
void put_adam_options(writer& out, const Options& o) {
  out.put<double>(o.lr());
  out.put<double>(std::get<0>(o.betas()));
  out.put<double>(std::get<1>(o.betas()));
  out.put<double>(o.eps());
  out.put<double>(o.weight_decay());
  out.put<uint8_t>(o.amsgrad());
}

void put_sgd_options(writer& out, const torch::optim::SGDOptions& o) {
  out.put<double>(o.lr());
  out.put<double>(o.momentum());
  out.put<double>(o.dampening());
  out.put<double>(o.weight_decay());
  out.put<uint8_t>(o.nesterov());
}

void put_rmsprop_options(writer& out, const torch::optim::RMSpropOptions& o) {
  out.put<double>(o.lr());
  out.put<double>(o.alpha());
  out.put<double>(o.eps());
  out.put<double>(o.weight_decay());
  out.put<double>(o.momentum());
  out.put<uint8_t>(o.centered());
}

void put_rmsprop_state(writer& out, const torch::optim::RMSpropParamState& s) {
  out.put<int64_t>(s.step());
  out.tensor(s.square_avg());
  out.tensor(s.momentum_buffer());
  out.tensor(s.grad_avg());
}

std::unique_ptr<torch::optim::RMSpropParamState> rmsprop_state(const param_record& r,
                                                               const at::Tensor& param,
                                                               const std::string& what) {
  auto state = std::make_unique<torch::optim::RMSpropParamState>();
  state->step(r.step);
  state->square_avg(restored(r.tensors[0], param, what));
  state->momentum_buffer(restored(r.tensors[1], param, what));
  state->grad_avg(restored(r.tensors[2], param, what));
  return state;
}

template <class State>
void put_adam_state(writer& out, const State& s) {
  out.put<int64_t>(s.step());
  out.tensor(s.exp_avg());
  out.tensor(s.exp_avg_sq());
  out.tensor(s.max_exp_avg_sq());
}

template <class State>
std::unique_ptr<State> adam_state(const param_record& r, const at::Tensor& param,
                                  const std::string& what) {
  auto state = std::make_unique<State>();
  state->step(r.step);
  state->exp_avg(restored(r.tensors[0], param, what));
  state->exp_avg_sq(restored(r.tensors[1], param, what));
  state->max_exp_avg_sq(restored(r.tensors[2], param, what));
  return state;
}

template <class Options>
void set_adam_options(torch::optim::OptimizerOptions& options, const group_record& g) {
  const auto& o = g.options;
  static_cast<Options&>(options)
      .lr(o[0])
      .betas({o[1], o[2]})
      .eps(o[3])
      .weight_decay(o[4])
      .amsgrad(g.flag);
}

}  // namespace

std::string optimizer_bytes_part(std::string_view bytes, int64_t first, int64_t count) {
  auto s = parse_one_group(bytes);
  auto& params = s.groups[0].params;
  if (first < 0 || count < 0 || first + count > static_cast<int64_t>(params.size()))
    throw std::runtime_error("parameters " + std::to_string(first) + " to " +
                             std::to_string(first + count) + " of a state of " +
                             std::to_string(params.size()));
  params = std::vector<param_record>(params.begin() + first, params.begin() + first + count);
  return emit(s);
}

std::string join_optimizer_bytes(const std::vector<std::string>& parts) {
  if (parts.empty())
    throw std::runtime_error("no optimizer states to join");
  auto joined = parse_one_group(parts[0]);
  for (std::size_t i = 1; i < parts.size(); ++i) {
    auto s = parse_one_group(parts[i]);
    if (s.kind != joined.kind)
      throw std::runtime_error("optimizer states of " + std::string(kind_name(s.kind)) + " and " +
                               kind_name(joined.kind) + " do not join");
    auto& to = joined.groups[0].params;
    for (auto& p : s.groups[0].params)
      to.push_back(std::move(p));
  }
  return emit(joined);
}

bool is_optimizer_bytes(std::string_view bytes) {
  return bytes.substr(0, magic.size()) == magic;
}

std::string save_optimizer_bytes(const torch::optim::Optimizer& optimizer) {
  const auto kind = kind_of(optimizer);
  std::size_t values = 0;
  for (const auto& group : optimizer.param_groups())
    for (const auto& p : group.params())
      values += static_cast<std::size_t>(p.numel()) * p.element_size();
  writer out(magic.size() + tensor_count(kind) * values + 4096);
  for (char c : magic)
    out.put<char>(c);
  out.put<uint8_t>(kind);
  out.put<uint64_t>(optimizer.param_groups().size());
  for (const auto& group : optimizer.param_groups()) {
    if (kind == adam_kind)
      put_adam_options(out, static_cast<const torch::optim::AdamOptions&>(group.options()));
    else if (kind == adamw_kind)
      put_adam_options(out, static_cast<const torch::optim::AdamWOptions&>(group.options()));
    else if (kind == rmsprop_kind)
      put_rmsprop_options(out, static_cast<const torch::optim::RMSpropOptions&>(group.options()));
    else
      put_sgd_options(out, static_cast<const torch::optim::SGDOptions&>(group.options()));
    out.put<uint64_t>(group.params().size());
    for (const auto& p : group.params()) {
      const auto& state = optimizer.state();
      const auto it = state.find(optimizer_state_key_of(optimizer, p));
      out.put<uint8_t>(it != state.end());
      if (it == state.end())
        continue;
      if (kind == adam_kind)
        put_adam_state(out, static_cast<const torch::optim::AdamParamState&>(*it->second));
      else if (kind == adamw_kind)
        put_adam_state(out, static_cast<const torch::optim::AdamWParamState&>(*it->second));
      else if (kind == rmsprop_kind)
        put_rmsprop_state(out, static_cast<const torch::optim::RMSpropParamState&>(*it->second));
      else
        out.tensor(static_cast<const torch::optim::SGDParamState&>(*it->second).momentum_buffer());
    }
  }
  return out.take();
}

std::string optimizer_bytes_problem(std::string_view bytes) {
  try {
    parse(bytes);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

void load_optimizer_bytes(torch::optim::Optimizer& optimizer, std::string_view bytes) {
  const auto s = parse(bytes);
  const auto kind = kind_of(optimizer);
  if (s.kind != kind)
    throw std::runtime_error(std::string("the state is of ") + kind_name(s.kind) +
                             ", the optimizer is " + kind_name(kind));
  auto& groups = optimizer.param_groups();
  if (s.groups.size() != groups.size())
    throw std::runtime_error("the state has " + std::to_string(s.groups.size()) +
                             " parameter groups, the optimizer " + std::to_string(groups.size()));
  // Everything is checked and copied before the optimizer changes.
  using state_ptr = std::unique_ptr<torch::optim::OptimizerParamState>;
  std::vector<std::vector<state_ptr>> states(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& params = groups[g].params();
    const auto& stored = s.groups[g].params;
    if (stored.size() != params.size())
      throw std::runtime_error("group " + std::to_string(g) + " has " +
                               std::to_string(stored.size()) + " parameters in the state, " +
                               std::to_string(params.size()) + " in the optimizer");
    for (std::size_t p = 0; p < params.size(); ++p) {
      const auto what = "parameter " + std::to_string(p) + " of group " + std::to_string(g);
      const auto& r = stored[p];
      if (!r.has_state) {
        states[g].push_back(nullptr);
        continue;
      }
      if (kind == adam_kind) {
        states[g].push_back(adam_state<torch::optim::AdamParamState>(r, params[p], what));
      } else if (kind == adamw_kind) {
        states[g].push_back(adam_state<torch::optim::AdamWParamState>(r, params[p], what));
      } else if (kind == rmsprop_kind) {
        states[g].push_back(rmsprop_state(r, params[p], what));
      } else {
        auto state = std::make_unique<torch::optim::SGDParamState>();
        state->momentum_buffer(restored(r.tensors[0], params[p], what));
        states[g].push_back(std::move(state));
      }
    }
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& o = s.groups[g].options;
    if (kind == adam_kind) {
      set_adam_options<torch::optim::AdamOptions>(groups[g].options(), s.groups[g]);
    } else if (kind == adamw_kind) {
      set_adam_options<torch::optim::AdamWOptions>(groups[g].options(), s.groups[g]);
    } else if (kind == rmsprop_kind) {
      static_cast<torch::optim::RMSpropOptions&>(groups[g].options())
          .lr(o[0])
          .alpha(o[1])
          .eps(o[2])
          .weight_decay(o[3])
          .momentum(o[4])
          .centered(s.groups[g].flag);
    } else {
      auto& options = static_cast<torch::optim::SGDOptions&>(groups[g].options());
      options.lr(o[0]).momentum(o[1]).dampening(o[2]).weight_decay(o[3]).nesterov(s.groups[g].flag);
    }
    const auto& params = groups[g].params();
    for (std::size_t p = 0; p < params.size(); ++p) {
      const auto key = optimizer_state_key_of(optimizer, params[p]);
      if (states[g][p])
        optimizer.state()[key] = std::move(states[g][p]);
      else
        optimizer.state().erase(key);
    }
  }
}

}  // namespace troupe
