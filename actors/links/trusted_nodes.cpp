#include "actors/links/trusted_nodes.hpp"

#include "core/io/terminal_output.hpp"

#include <fmt/format.h>

namespace troupe {

void trusted_nodes::allow(const caf::node_id& node) {
  std::lock_guard<std::mutex> lock(mutex_);
  nodes_.insert(node);
}

bool trusted_nodes::allows(const caf::node_id& node) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return nodes_.count(node) > 0;
}

bool sender_trusted(trusted_nodes* trusted, const caf::strong_actor_ptr& sender,
                    const caf::node_id& here) {
  if (trusted == nullptr)
    return true;
  const bool ok = sender && (sender->node() == here || trusted->allows(sender->node()));
  if (!ok && trusted->count_refusal())
    print_to_terminal(
        stderr, "troupe: ignored a message from {}, which never joined\n",
        sender ? "node " + to_string(sender->node()) : std::string("an anonymous sender"));
  return ok;
}

}  // namespace troupe
