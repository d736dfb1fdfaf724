// Which other processes may talk to this one's actors. CAF's middleman delivers a message to any
// actor whose handle ever left the process, from any connection, even one that never completed
// a handshake; so every actor that other nodes can reach checks the sender's node against this
// set, which only the join protocol fills (the gatekeeper on the coordinator, the coordinator's
// word on a node).
#pragma once

#include <caf/actor_control_block.hpp>
#include <caf/detail/type_traits.hpp>
#include <caf/error.hpp>
#include <caf/node_id.hpp>
#include <caf/sec.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <type_traits>
#include <utility>

namespace troupe {

class trusted_nodes {
 public:
  void allow(const caf::node_id& node);
  bool allows(const caf::node_id& node) const;
  /// Counts a refused message; returns true for the first few, which are worth a log line.
  bool count_refusal() { return refused_.fetch_add(1) < 5; }
  int64_t refused() const { return refused_.load(); }

 private:
  mutable std::mutex mutex_;
  std::set<caf::node_id> nodes_;
  std::atomic<int64_t> refused_{0};
};

/// True when a message from `sender` may be handled by an actor of node `here`: it comes from
/// this process or a trusted node. A null set trusts everyone: a run inside one process has no
/// network to fear. The first few refusals are logged to stderr.
bool sender_trusted(trusted_nodes* trusted, const caf::strong_actor_ptr& sender,
                    const caf::node_id& here);

/// The same for the message `self` is handling now.
template <class Self>
bool sender_trusted(Self* self, trusted_nodes* trusted) {
  return trusted == nullptr ||
         sender_trusted(trusted, self->current_sender(), self->system().node());
}

namespace detail {

// `f` behind the check, with f's own signature (a typed behavior matches handlers by it).
template <class Self, class F, class R, class... Ts>
auto trusted_handler(Self* self, trusted_nodes* trusted, F f, caf::detail::type_list<Ts...>) {
  return [self, trusted, f = std::move(f)](Ts... xs) mutable -> R {
    if (!sender_trusted(self, trusted)) {
      if constexpr (std::is_void_v<R>)
        return;
      else
        return caf::make_error(caf::sec::invalid_argument);  // a refused request
    }
    return f(std::forward<Ts>(xs)...);
  };
}

}  // namespace detail

/// The behavior of handlers `fs`, all behind the one check of the sender: a message from a node
/// this process does not trust is dropped (a request is refused) before any handler sees it.
/// Every actor other nodes can reach builds its behavior with it, instead of a check per handler.
///   return trusted_behavior<my_actor::behavior_type>(self, trusted, [self](atom, int64_t) {..});
template <class Behavior, class Self, class... Fs>
Behavior trusted_behavior(Self* self, trusted_nodes* trusted, Fs... fs) {
  return Behavior{
      detail::trusted_handler<Self, Fs, typename caf::detail::get_callable_trait<Fs>::result_type>(
          self, trusted, std::move(fs),
          typename caf::detail::get_callable_trait<Fs>::arg_types{})...};
}

}  // namespace troupe
