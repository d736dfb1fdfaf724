#include "actors/cluster/gatekeeper.hpp"

#include "messages/type_ids.hpp"

#include <fmt/format.h>
#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>

namespace troupe {

struct gatekeeper_state {
  gatekeeper_options options;
  caf::response_promise waiting;
  bool closed = false;  ///< the roster went to the session (or the wait timed out)
  bool over = false;    ///< the session is done with the run: no joins at all
  std::string failure;  ///< a node could not take the job: the run cannot start
  caf::actor driver;    ///< the run driver, once it registered for replacements
  /// Nodes that joined after the run started: the session reads the shared roster during the
  /// run, so they join it only when the session closes the gatekeeper.
  std::vector<joined_node> replacements;
  std::vector<replacement_node> unclaimed;  ///< ready before the driver registered
  /// The challenge each node that asked was given, until its join uses it; at most
  /// max_challenges, the oldest dropped first (a flood of asks holds no more).
  std::map<caf::node_id, std::string> challenges;
  std::deque<caf::node_id> challenge_order;
  static constexpr std::size_t max_challenges = 256;
  static inline const char* name = "gatekeeper";
};

namespace {

using gatekeeper_actor = caf::stateful_actor<gatekeeper_state>;

caf::timespan seconds(double s) {
  return std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(s));
}

// Tells the waiting session, once: "" when every node is in and ready, else why not.
void answer(gatekeeper_actor* self, const std::string& why) {
  auto& st = self->state;
  if (st.closed || !st.waiting.pending())
    return;
  st.closed = true;
  st.waiting.deliver(why);
}

void close_when_complete(gatekeeper_actor* self) {
  auto& st = self->state;
  const auto& roster = *st.options.roster;
  if (!st.failure.empty()) {
    answer(self, st.failure);
    return;
  }
  if (roster.size() < static_cast<std::size_t>(st.options.terms.wanted))
    return;
  for (const auto& n : roster)
    if (!n.ready)
      return;
  answer(self, "");
}

// Until the run starts, a node that leaves frees its place; from then on the driver watches,
// and only its name and its place in the count are freed (for a replacement, which may take
// the same name); the roster keeps it (the session tells every node the run is over).
void forget_departed(gatekeeper_actor* self, const caf::down_msg& msg) {
  auto& st = self->state;
  if (st.closed) {
    for (const auto* list : {st.options.roster.get(), &st.replacements})
      for (const auto& n : *list)
        if (n.agent.address() == msg.source) {
          auto& joined = st.options.terms.joined;
          const auto it = std::find(joined.begin(), joined.end(), n.name);
          if (it != joined.end())
            joined.erase(it);
        }
    return;
  }
  auto& roster = *st.options.roster;
  for (std::size_t i = 0; i < roster.size(); ++i)
    if (roster[i].agent.address() == msg.source) {
      st.options.log("node " + roster[i].name + " left before the run started (" +
                     self->system().render(msg.reason) + ")");
      auto& joined = st.options.terms.joined;
      joined.erase(joined.begin() + static_cast<std::ptrdiff_t>(i));
      roster.erase(roster.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
}

join_reply admit(gatekeeper_actor* self, join_request& req, const caf::strong_actor_ptr& sender,
                 const std::string& certificate_name) {
  auto& st = self->state;
  auto& o = st.options;
  std::string challenge;
  if (sender) {
    const auto it = st.challenges.find(sender->node());
    if (it != st.challenges.end()) {
      challenge = std::move(it->second);
      st.challenges.erase(it);  // one join per challenge
      st.challenge_order.erase(
          std::find(st.challenge_order.begin(), st.challenge_order.end(), sender->node()));
    }
  }
  auto refusal = join_refusal(
      {req.version, req.proof, req.name, req.threads, certificate_name, challenge}, o.terms);
  if (refusal.empty() && (st.over || (st.closed && !o.replacements)))
    refusal = "node \"" + req.name + "\": the run has started";
  if (refusal.empty() && (!sender || !req.agent || req.agent->node() != sender->node()))
    refusal = "node \"" + req.name + "\": its agent is not on the node that sent the join";
  if (!refusal.empty()) {
    o.log("refused a join: " + refusal);
    return {refusal, "", "", {}};
  }
  o.trusted->allow(sender->node());
  self->monitor(req.agent);
  o.terms.joined.push_back(req.name);
  if (st.closed) {
    st.replacements.push_back({req.name, req.agent, req.peer_host, req.peer_port, false, true});
    o.log(fmt::format("node {} joined the running job ({} threads)", req.name, req.threads));
    return {"", o.plan_json, o.plan_digest, o.files};
  }
  o.roster->push_back({req.name, req.agent, req.peer_host, req.peer_port});
  o.log(fmt::format("node {} joined ({} threads; {} of {})", req.name, req.threads,
                    o.roster->size(), o.terms.wanted));
  return {"", o.plan_json, o.plan_digest, o.files};
}

// With TLS the join waits for the middleman to say which connection the sender's node came
// through, to check the name on that connection's certificate.
caf::typed_response_promise<join_reply> on_join(gatekeeper_actor* self, join_request& req) {
  const auto sender = self->current_sender();
  auto promise = self->make_response_promise<join_reply>();
  const auto& o = self->state.options;
  if (!o.names || !sender) {
    promise.deliver(admit(self, req, sender, ""));
    return promise;
  }
  with_peer_name(self, o.middleman, *o.names, sender->node(),
                 [self, req, sender, promise](const std::string& name) mutable {
                   promise.deliver(admit(self, req, sender, name));
                 });
  return promise;
}

// A node that joined took the job ("") or could not (why): the run cannot start without it,
// and waiting for the join timeout would only hide the reason.
caf::result<caf::ok_atom> on_ready(gatekeeper_actor* self, const std::string& failure) {
  auto& st = self->state;
  const auto& sender = self->current_sender();
  auto all = [&st] {
    std::vector<joined_node*> nodes;
    for (auto& n : *st.options.roster)
      nodes.push_back(&n);
    for (auto& n : st.replacements)
      nodes.push_back(&n);
    return nodes;
  }();
  for (auto* node : all) {
    auto& n = *node;
    if (!sender || n.agent.node() != sender->node())
      continue;
    if (failure.empty()) {
      n.ready = true;
      if (n.replacement) {  // the run is going: the driver fits it in
        replacement_node r{n.name, n.agent, n.peer_host, n.peer_port};
        if (st.driver)
          self->send(st.driver, replace_atom_v, std::move(r));
        else
          st.unclaimed.push_back(std::move(r));
      }
    } else {
      st.options.log("node " + n.name + " cannot take the job: " + failure);
      if (st.failure.empty())
        st.failure = "node " + n.name + " cannot take the job: " + failure;
    }
    close_when_complete(self);
    return caf::ok_atom_v;
  }
  return caf::make_error(caf::sec::invalid_argument);
}

caf::response_promise on_wait(gatekeeper_actor* self) {
  auto& st = self->state;
  // Checked first: a response promise takes the sender out of the current message.
  const bool refused = !sender_trusted(self, st.options.trusted.get()) || st.waiting.pending();
  auto promise = self->make_response_promise();
  if (refused) {
    promise.deliver(caf::make_error(caf::sec::invalid_argument));
    return promise;
  }
  st.waiting = promise;
  self->delayed_send(self, seconds(st.options.join_timeout_s), caf::timeout_atom_v);
  close_when_complete(self);
  return promise;
}

// A fresh challenge for the sender's node: its join must prove the token over it.
caf::result<std::string> on_challenge(gatekeeper_actor* self) {
  auto& st = self->state;
  const auto& sender = self->current_sender();
  if (!sender)
    return caf::make_error(caf::sec::invalid_argument);
  const auto node = sender->node();
  if (st.challenges.count(node) == 0) {
    st.challenge_order.push_back(node);
    while (st.challenge_order.size() > gatekeeper_state::max_challenges) {
      st.challenges.erase(st.challenge_order.front());
      st.challenge_order.pop_front();
    }
  }
  return st.challenges[node] = new_challenge();
}

caf::behavior gatekeeper(gatekeeper_actor* self, gatekeeper_options options) {
  self->state.options = std::move(options);
  self->set_down_handler([self](caf::down_msg& msg) { forget_departed(self, msg); });
  return {
      [self](challenge_atom) { return on_challenge(self); },
      [self](caf::join_atom, join_request& req) { return on_join(self, req); },
      [self](caf::join_atom, const std::string& failure) { return on_ready(self, failure); },
      [self](caf::get_atom) { return on_wait(self); },
      // From the session: no more joins (it gave up waiting, e.g. on Ctrl-C), so that it can
      // read the roster.
      [self](caf::close_atom) -> caf::result<caf::ok_atom> {
        const auto& sender = self->current_sender();
        if (!sender || sender->node() != self->node())
          return caf::make_error(caf::sec::invalid_argument);
        auto& st = self->state;
        st.closed = true;
        st.over = true;
        for (auto& n : st.replacements)  // the session reads the roster once it has the answer
          st.options.roster->push_back(std::move(n));
        st.replacements.clear();
        return caf::ok_atom_v;
      },
      // The run driver, for replacements (from this process only).
      [self](replace_atom, const caf::actor& driver) {
        const auto& sender = self->current_sender();
        if (!sender || sender->node() != self->node())
          return;
        auto& st = self->state;
        st.driver = driver;
        for (auto& r : st.unclaimed)
          self->send(driver, replace_atom_v, std::move(r));
        st.unclaimed.clear();
      },
      [self](caf::timeout_atom) {
        auto& st = self->state;
        if (st.closed || self->current_sender() != self->ctrl())
          return;
        st.closed = true;
        std::string loading;
        for (const auto& n : *st.options.roster)
          loading += n.ready ? "" : (loading.empty() ? "" : ", ") + n.name;
        st.waiting.deliver(fmt::format(
            "{} of {} node(s) joined within {} s (joined: {}){}", st.options.roster->size(),
            st.options.terms.wanted, st.options.join_timeout_s, names_of(*st.options.roster),
            loading.empty() ? "" : "; still loading their data: " + loading));
      },
  };
}

}  // namespace

std::string names_of(const std::vector<joined_node>& nodes) {
  std::string out;
  for (const auto& n : nodes)
    out += (out.empty() ? "" : ", ") + n.name;
  return out.empty() ? "none" : out;
}

caf::actor spawn_gatekeeper(caf::actor_system& system, gatekeeper_options options) {
  return system.spawn(gatekeeper, std::move(options));
}

}  // namespace troupe
