// The key LibTorch's optimizers file a parameter's state under, whichever LibTorch is built in.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

namespace troupe {

/// LibTorch 1.x keys a parameter's optimizer state by its TensorImpl's address printed as a
/// string, 2.x by the address itself (GPU builds use a 2.x LibTorch): `Key` is the state map's.
template <class Key>
Key optimizer_state_key(const at::Tensor& param) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream out;
    out << param.unsafeGetTensorImpl();
    return out.str();
  } else {
    return param.unsafeGetTensorImpl();
  }
}

/// The key `optimizer`'s state map files `param`'s state under.
template <class Optimizer>
auto optimizer_state_key_of(const Optimizer& optimizer, const at::Tensor& param) {
  using map = std::decay_t<decltype(optimizer.state())>;
  return optimizer_state_key<typename map::key_type>(param);
}

/// `param`'s state in `optimizer`, as the optimizer's own state type (`State`), or null.
template <class State, class Optimizer>
State* find_optimizer_state(Optimizer& optimizer, const at::Tensor& param) {
  auto it = optimizer.state().find(optimizer_state_key_of(optimizer, param));
  return it == optimizer.state().end() ? nullptr : static_cast<State*>(it->second.get());
}

/// Files `state` as `param`'s in `optimizer`, in place of any it had, and returns it.
template <class State, class Optimizer>
State& file_optimizer_state(Optimizer& optimizer, const at::Tensor& param,
                            std::unique_ptr<State> state) {
  auto& filed = optimizer.state()[optimizer_state_key_of(optimizer, param)];
  filed = std::move(state);
  return static_cast<State&>(*filed);
}

}  // namespace troupe
