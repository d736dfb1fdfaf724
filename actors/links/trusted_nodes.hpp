// Which other processes may talk to this one's actors. CAF's middleman delivers a message to any
// actor whose handle ever left the process, from any connection, even one that never completed
// a handshake; so every actor that other nodes can reach checks the sender's node against this
// set, which only the join protocol fills (the gatekeeper on the coordinator, the coordinator's
// word on a node).
#pragma once

#include <caf/actor_control_block.hpp>
#include <caf/node_id.hpp>

#include <atomic>
#include <mutex>
#include <set>

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

}  // namespace troupe
