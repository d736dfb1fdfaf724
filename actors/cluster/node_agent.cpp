// A node's agent: the actor through which the coordinator reaches a node. It joins (proving the
// token over the gatekeeper's challenge), takes the job and its files, starts the replicas the
// coordinator places here, opens direct links to peers, forms this node's part of the socket
// ring and shared-memory sums, and leaves when the run is over or it is told to.
#include "actors/cluster/node_agent.hpp"

#include "actors/cluster/shipped_job_files.hpp"
#include "actors/workers/replica_worker.hpp"
#include "actors/workers/server_shard.hpp"
#include "core/cluster/join_check.hpp"
#include "core/data/data_source.hpp"
#include "core/run/node_fit.hpp"
#include "core/run/plan_wire.hpp"
#include "messages/error_code.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <chrono>
#include <filesystem>

namespace troupe {
namespace {

using namespace std::chrono_literals;

std::string shipped_model_path(const std::string& scratch) {
  return scratch + "/model.pt";
}

void stop(agent_actor* self, const std::string& error) {
  auto& st = self->state;
  if (!error.empty() && st.outcome->error.empty())
    st.outcome->error = error;
  // A replica waiting in the shared-memory reduction reads no messages: release it first.
  if (st.context && st.context->host)
    st.context->host->abort("node " + st.node_name + " stopped");
  for (const auto& w : st.workers)
    self->send_exit(w, caf::exit_reason::user_shutdown);
  for (const auto& s : st.shards)
    self->send_exit(s, caf::exit_reason::user_shutdown);
  self->quit();
}

// The coordinator's plan, as sent: decoded, and checked against its digest (a plan that
// changed on the way, or a troupe that reads it differently from the coordinator's).
run_plan decode_plan(const join_reply& reply) {
  const auto json = nlohmann::json::parse(reply.plan_json, nullptr, false);
  if (json.is_discarded())
    throw std::runtime_error("the coordinator's plan is not JSON");
  auto plan = plan_from_json(json);
  if (const auto digest = plan_digest(plan); digest != reply.plan_digest)
    throw std::runtime_error(fmt::format(
        "the plan this node decoded has SHA-256 {}, the coordinator's {}: run the same troupe "
        "version on every machine",
        digest.substr(0, 12), reply.plan_digest.substr(0, 12)));
  return plan;
}

// Builds what the replicas share from the plan the coordinator sent (this node plans nothing
// again: its cores, devices and paths may differ) and the data from this node's own disk, which
// must have the facts the plan was made with. The links then take the run's limits.
void take_job(agent_actor* self, const join_reply& reply) {
  auto& st = self->state;
  auto plan = decode_plan(reply);
  auto& job = plan.job;
  if (job.model.kind == model_kind::torchscript)
    job.model.path = shipped_model_path(st.scratch);  // the coordinator's file, fetched
  auto data = load_dataset(job.data, job.seed);
  if (auto misfit = node_misfit(plan, facts_of(*data), local_inventory()); !misfit.empty())
    throw std::runtime_error(misfit);
  st.links->set_max_message_bytes(
      largest_message_bytes(plan.model.flat_size(), job.cluster.bucket_mb, reply.plan_json.size()));
  st.links->set_idle_timeout(job.cluster.node_timeout_s);
  auto context = std::make_shared<worker_context>(
      *make_worker_context(std::move(plan), std::move(data), st.trusted));
  // Where the socket ring's places will be (the coordinator forms it, maybe several times):
  // every replica started here, replacements included, shares them.
  if (context->plan->gradients == gradient_meeting::ring)
    context->socket_rings = std::make_shared<socket_ring_places>(
        st.links->tls_native(), job.cluster.collective, job.cluster.sum_idle_timeout_s());
  st.context = std::move(context);
  const auto& taken = st.context->plan->job;
  st.log(fmt::format("node {}: joined; job {} ({} replica(s), policy {}; plan {})", st.node_name,
                     taken.name, taken.parallelism.replicas, to_string(taken.parallelism.policy),
                     reply.plan_digest.substr(0, 12)));
}

// Takes the job and tells the gatekeeper whether this node is ready. A node that cannot take it
// (its data files differ from the coordinator's or are bad, the model file did not arrive whole)
// says why and waits for the answer before it leaves: the run then fails at once with that
// reason, not with a timeout somewhere later.
void report_job(agent_actor* self, const caf::actor& gate, const join_reply& reply,
                std::string failure) {
  if (failure.empty()) {
    try {
      take_job(self, reply);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  const auto leave_if_failed = [self, failure] {
    if (!failure.empty())
      stop(self, failure);
  };
  self->request(gate, 10s, caf::join_atom_v, failure)
      .await([leave_if_failed](caf::ok_atom) { leave_if_failed(); },
             [leave_if_failed](caf::error&) { leave_if_failed(); });
}

// Sends the join, with the proof of the token over `challenge`.
void send_join(agent_actor* self, const caf::actor& gate, join_request req) {
  self->request(gate, 30s, caf::join_atom_v, std::move(req))
      .await(
          [self, gate](join_reply& reply) {
            if (!reply.refusal.empty())
              return stop(self, "refused: " + reply.refusal);
            receive_job_files(self, reply.files, shipped_model_path(self->state.scratch),
                              [self, gate, reply](const std::string& failure) {
                                report_job(self, gate, reply, failure);
                              });
          },
          [self](caf::error& e) {
            stop(self, "no answer to the join: " + self->system().render(e));
          });
}

// From this process's main thread: join the coordinator behind `gate`, first asking it for a
// challenge to prove the token over (the token itself never travels). `await` holds back every
// other message (a spawn request) until the job is in hand.
void join(agent_actor* self, const caf::actor& gate, join_request& req, const std::string& token) {
  self->state.coordinator_gate = gate;
  self->monitor(gate);
  req.agent = caf::actor_cast<caf::actor>(self);
  self->request(gate, 30s, challenge_atom_v)
      .await(
          [self, gate, req, token](std::string& challenge) {
            auto proven = req;
            proven.proof = token.empty() ? "" : join_proof(token, challenge, req.name);
            send_join(self, gate, std::move(proven));
          },
          [self](caf::error& e) {
            stop(self, "no answer to the join: " + self->system().render(e));
          });
}

// Opens a direct connection to peer `name`'s agent, so ring chunks to its replicas go there
// without a detour through the coordinator. With TLS the peer's certificate must name `name`.
// Answers once the middleman has (or has not) connected.
caf::response_promise connect_peer(agent_actor* self, const std::string& host, uint16_t port,
                                   const std::string& name) {
  // Checked first: a response promise takes the sender out of the current message.
  const bool refused = !sender_trusted(self, self->state.trusted.get());
  auto promise = self->make_response_promise();
  if (refused) {
    promise.deliver(caf::make_error(caf::sec::invalid_argument));
    return promise;
  }
  auto* links = self->state.links;
  const auto where = host + ":" + std::to_string(port);
  self->request(links->middleman(), 20s, caf::connect_atom_v, host, port)
      .then(
          [self, links, promise, name, where](const caf::node_id& node, caf::strong_actor_ptr&,
                                              std::set<std::string>&) mutable {
            if (!links->tls())
              return promise.deliver(caf::ok_atom_v);
            with_peer_name(
                self, links->middleman(), links->names(), node,
                [promise, name, where](const std::string& presented) mutable {
                  if (presented == name)
                    return promise.deliver(caf::ok_atom_v);
                  promise.deliver(caf::make_error(caf::sec::invalid_argument,
                                                  where + " presented the certificate of \"" +
                                                      presented + "\", not of node " + name));
                });
          },
          [promise](caf::error& e) mutable { promise.deliver(std::move(e)); });
  return promise;
}

caf::result<caf::actor> start_replica(agent_actor* self, int64_t rank, const caf::actor& driver) {
  auto& st = self->state;
  if (!st.context || rank < 0 || rank >= st.context->plan->job.parallelism.replicas)
    return caf::make_error(caf::sec::invalid_argument,
                           "cannot start replica " + std::to_string(rank));
  auto w = spawn_replica_worker(self->system(), st.context, rank,
                                caf::actor_cast<run_driver_actor>(driver));
  st.workers.push_back(w);
  return caf::actor_cast<caf::actor>(w);
}

// A shard of async's sharded parameter server (actors/workers/server_shard), for the
// coordinator's server.
caf::result<caf::actor> start_shard(agent_actor* self, int64_t shard) {
  auto& st = self->state;
  if (!st.context || !st.context->plan->sharded_server() || shard < 0 ||
      shard >= st.context->plan->server_shards())
    return caf::make_error(caf::sec::invalid_argument,
                           "cannot start parameter server shard " + std::to_string(shard));
  auto s = spawn_server_shard(self->system(), st.context, shard);
  st.shards.push_back(s);
  return caf::actor_cast<caf::actor>(s);
}

// The run is over: answer, so the coordinator knows the word got out, then leave.
caf::response_promise run_over(agent_actor* self, const std::string& status) {
  const bool refused = !sender_trusted(self, self->state.trusted.get());
  auto promise = self->make_response_promise();
  if (refused) {
    promise.deliver(caf::make_error(caf::sec::invalid_argument));
    return promise;
  }
  self->state.outcome->status = status;
  promise.deliver(caf::ok_atom_v);
  stop(self, "");
  return promise;
}

}  // namespace

caf::behavior node_agent(agent_actor* self, agent_state init) {
  self->state = std::move(init);
  self->set_down_handler([self](caf::down_msg& msg) {
    if (msg.source != self->state.coordinator_gate.address())
      return;
    // The coordinator closes the connection of a node silent past node_timeout_s (one that was
    // stopped) as it gives the node up: from here that looks like any lost connection.
    stop(self, msg.reason == caf::exit_reason::remote_link_unreachable
                   ? std::string("lost the coordinator: its connection closed (the coordinator "
                                 "ended, or gave this node up after it was silent past "
                                 "cluster.node_timeout_s)")
                   : "lost the coordinator (" + self->system().render(msg.reason) + ")");
  });
  self->set_exception_handler([self](caf::scheduled_actor*, std::exception_ptr& ep) {
    auto err = make_error_from_exception(ep);
    stop(self, self->system().render(err));
    return err;
  });
  auto trusted = self->state.trusted.get();
  return {
      [self, trusted](caf::join_atom, const caf::actor& gate, join_request& req,
                      const std::string& token) {
        if (sender_trusted(self, trusted) && self->current_sender()->node() == self->node())
          join(self, gate, req, token);
      },
      [self, trusted](trust_atom, const caf::node_id& peer) -> caf::result<caf::ok_atom> {
        if (!sender_trusted(self, trusted))
          return caf::sec::invalid_argument;
        trusted->allow(peer);
        return caf::ok_atom_v;
      },
      [self](caf::connect_atom, const std::string& host, uint16_t port, const std::string& name) {
        return connect_peer(self, host, port, name);
      },
      [self, trusted](caf::spawn_atom, int64_t rank,
                      const caf::actor& driver) -> caf::result<caf::actor> {
        if (!sender_trusted(self, trusted))
          return caf::sec::invalid_argument;
        return start_replica(self, rank, driver);
      },
      [self, trusted](caf::spawn_atom, shard_atom, int64_t shard) -> caf::result<caf::actor> {
        if (!sender_trusted(self, trusted))
          return caf::sec::invalid_argument;
        return start_shard(self, shard);
      },
      [self](shm_atom, const host_segment& segment) { return open_segment(self, segment); },
      [self](shm_atom, caf::close_atom, bool keep) { return settle_segment(self, keep); },
      [self](ring_atom, caf::open_atom, ring_places& places) {
        return open_ring_places(self, std::move(places));
      },
      [self](ring_atom, caf::connect_atom, const ring_places& places) {
        return connect_ring_places(self, places);
      },
      [self](ring_atom, caf::join_atom, const ring_places& places) {
        return join_ring_places(self, places);
      },
      [self](ring_atom, caf::close_atom) { return close_ring_places(self); },
      [self](done_atom, const std::string& status) { return run_over(self, status); },
      // The coordinator went on without this node (it held a step up, or it came back from a
      // stop after the run had given up on it): nothing it does counts any more.
      [self, trusted](leave_atom, const std::string& why) {
        if (sender_trusted(self, trusted))
          stop(self, "told to leave: " + why);
      },
  };
}

}  // namespace troupe
