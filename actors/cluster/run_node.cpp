#include "actors/cluster/run_node.hpp"

#include "actors/cluster/node_agent_state.hpp"
#include "actors/cluster/shipped_job_files.hpp"
#include "actors/cluster/system_config.hpp"
#include "actors/links/guarded_links.hpp"
#include "actors/workers/replica_worker.hpp"
#include "core/cluster/join_check.hpp"
#include "core/cluster/link_limits.hpp"
#include "core/config/parse_job.hpp"
#include "core/data/data_source.hpp"
#include "messages/error_code.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

namespace troupe {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

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
  self->quit();
}

// Builds what the replicas share from the job the coordinator sent: the same plan the
// coordinator made (the same function of the same job and data facts), and the data from this
// node's own disk, which must match it. The links then take the run's limits.
void take_job(agent_actor* self, const std::string& job_json) {
  auto& st = self->state;
  auto job = parse_job(nlohmann::json::parse(job_json));
  if (job.model.kind == model_kind::torchscript)
    job.model.path = shipped_model_path(st.scratch);  // the coordinator's file, fetched
  auto data = load_dataset(job.data, job.seed);
  auto plan = make_run_plan(job, facts_of(*data));
  st.links->set_max_message_bytes(
      largest_message_bytes(plan.model.flat_size(), job.cluster.bucket_mb, job_json.size()));
  st.links->set_idle_timeout(job.cluster.node_timeout_s);
  auto context = std::make_shared<worker_context>(
      *make_worker_context(std::move(plan), std::move(data), st.trusted));
  // Where the socket ring's places will be (the coordinator forms it, maybe several times):
  // every replica started here, replacements included, shares them.
  if (context->plan->gradients == gradient_meeting::ring)
    context->socket_rings = std::make_shared<socket_ring_places>();
  st.context = std::move(context);
  st.log(fmt::format("node {}: joined; job {} ({} replica(s), policy {})", st.node_name, job.name,
                     job.parallelism.replicas, to_string(job.parallelism.policy)));
}

// Takes the job and tells the gatekeeper whether this node is ready. A node that cannot take it
// (its data files differ from the coordinator's or are bad, the model file did not arrive whole)
// says why and waits for the answer before it leaves: the run then fails at once with that
// reason, not with a timeout somewhere later.
void report_job(agent_actor* self, const caf::actor& gate, const std::string& job_json,
                std::string failure) {
  if (failure.empty()) {
    try {
      take_job(self, job_json);
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
                              [self, gate, job = reply.job_json](const std::string& failure) {
                                report_job(self, gate, job, failure);
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

caf::behavior node_agent(agent_actor* self, agent_state init) {
  self->state = std::move(init);
  self->set_down_handler([self](caf::down_msg& msg) {
    if (msg.source == self->state.coordinator_gate.address())
      stop(self, "lost the coordinator (" + self->system().render(msg.reason) + ")");
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
      [self](shm_atom, const std::string& name, uint64_t nonce, bool create) {
        return open_segment(self, name, nonce, create);
      },
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

// Connects to the coordinator's gatekeeper, retrying while the coordinator starts up. A
// connection that TLS refused is not retried: the certificate will not change.
caf::expected<std::pair<caf::node_id, caf::actor>> connect(caf::actor_system& system,
                                                           guarded_links& links,
                                                           const node_options& o) {
  caf::scoped_actor self{system};
  const auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                std::chrono::duration<double>(o.connect_timeout_s));
  caf::error last;
  for (bool first = true;; first = false) {
    std::optional<std::pair<caf::node_id, caf::actor>> result;
    self->request(links.middleman(), 10s, caf::connect_atom_v, o.coordinator.host,
                  o.coordinator.port)
        .receive(
            [&](caf::node_id& node, caf::strong_actor_ptr& handle, std::set<std::string>&) {
              result.emplace(node, caf::actor_cast<caf::actor>(handle));
            },
            [&](caf::error& e) { last = std::move(e); });
    if (result && result->second)
      return *result;
    if (result)
      return caf::make_error(caf::sec::no_actor_published_at_port, "nothing troupe listens there");
    if (const auto why = links.last_tls_failure(); !why.empty())
      return caf::make_error(caf::sec::cannot_connect_to_node, why);
    if (clock_type::now() >= deadline)
      return last;
    if (first && o.log)
      o.log(fmt::format("node {}: waiting for the coordinator at {}:{}", o.name, o.coordinator.host,
                        o.coordinator.port));
    std::this_thread::sleep_for(200ms);
  }
}

// With TLS, the name on the certificate of the process this node reached; "" when it is the
// coordinator's (or without TLS), else why not: a node never sends its token to anyone else.
std::string not_the_coordinator(caf::actor_system& system, guarded_links& links,
                                const caf::node_id& node) {
  if (!links.tls())
    return "";
  caf::scoped_actor self{system};
  std::string name;
  self->request(links.middleman(), 5s, caf::get_atom_v, node)
      .receive([&](caf::node_id&, std::string& addr,
                   uint16_t port) { name = links.names().at(addr, port); },
               [](caf::error&) {});
  if (name == coordinator_name)
    return "";
  return "it presented the certificate of \"" + name + "\", not the coordinator's";
}

link_options node_links(const node_options& o) {
  link_options l;
  l.tls = o.tls;
  l.limits.max_message_bytes = pre_join_message_bytes;
  l.limits.idle_timeout_s = o.coordinator_timeout_s;
  l.log = [log = o.log, name = o.name](const std::string& line) {
    if (log)
      log("node " + name + ": " + line);
  };
  return l;
}

// The run is over and the node has nothing left to save, but CAF 0.17's shutdown (it waits for
// every detached actor's thread) was seen to wait forever, about one exit in ten, when the ring
// peers' connections close in the same instant. A node must never hang: if the actor system has
// not shut down a few seconds after this call, the process ends with `code` anyway.
void exit_if_shutdown_hangs(int code) {
  std::thread([code] {
    std::this_thread::sleep_for(2s);
    std::fflush(nullptr);
    std::_Exit(code);
  }).detach();
}

// A private folder (mode 0700) for the node's part of the run, removed when the node is done.
class scratch_folder {
 public:
  scratch_folder() {
    auto pattern = (std::filesystem::temp_directory_path() / "troupe-node-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("cannot make a scratch folder in " +
                               std::filesystem::temp_directory_path().string() + ": " +
                               std::strerror(errno));
    path_ = pattern;
  }
  ~scratch_folder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  scratch_folder(const scratch_folder&) = delete;
  scratch_folder& operator=(const scratch_folder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Joins and serves the run until the agent stops; the exit code.
int serve(caf::actor_system& system, guarded_links& links, const node_options& o) {
  const auto log = o.log ? o.log : [](const std::string&) {};
  auto trusted = std::make_shared<trusted_nodes>();
  auto outcome = std::make_shared<node_outcome>();
  agent_state init;
  init.node_name = o.name;
  init.peer_host = o.peer_host;
  init.trusted = trusted;
  init.outcome = outcome;
  init.log = log;
  init.links = &links;
  std::optional<scratch_folder> scratch;
  try {
    scratch.emplace();
  } catch (const std::exception& e) {
    log("node " + o.name + ": " + e.what());
    return 1;
  }
  init.scratch = scratch->path();
  auto agent = system.spawn(node_agent, std::move(init));
  caf::scoped_actor self{system};
  self->monitor(agent);
  const auto give_up = [&](const std::string& why) {
    log("node " + o.name + ": " + why);
    self->send_exit(agent, caf::exit_reason::user_shutdown);
    self->receive([](caf::down_msg&) {}, caf::after(2s) >> [] {});
    return 1;
  };
  auto peer_port = links.publish(agent, 0, o.peer_host);
  if (!peer_port)
    return give_up("cannot listen for peers on " + o.peer_host + ": " +
                   system.render(peer_port.error()));
  const auto where = fmt::format("{}:{}", o.coordinator.host, o.coordinator.port);
  const auto gate = connect(system, links, o);
  if (!gate)
    return give_up("cannot reach the coordinator at " + where + ": " + system.render(gate.error()));
  if (const auto why = not_the_coordinator(system, links, gate->first); !why.empty())
    return give_up("refused the coordinator at " + where + ": " + why);
  trusted->allow(gate->first);
  join_request req{o.version, "", o.name, o.threads, o.peer_host, *peer_port, {}};
  self->send(agent, caf::join_atom_v, gate->second, std::move(req), o.token);
  self->receive([](caf::down_msg&) {});
  int code = 0;
  if (!outcome->error.empty()) {
    log("node " + o.name + ": " + outcome->error);
    code = 1;
  } else {
    log("node " + o.name + ": the run " + outcome->status);
    code = outcome->status == to_string(run_status::succeeded) ? 0 : 1;
  }
  links.unpublish(agent, *peer_port);
  return code;
}

}  // namespace

int run_node(const node_options& o) {
  at::set_num_threads(1);
  caf::actor_system_config cfg;
  caf::actor_system system{configure_networked(cfg)};
  std::optional<guarded_links> links;  // after `system`: it must go first
  try {
    links.emplace(system, node_links(o));
  } catch (const std::exception& e) {
    if (o.log)
      o.log("node " + o.name + ": cannot set up TLS: " + e.what());
    return 1;
  }
  const int code = serve(system, *links, o);
  exit_if_shutdown_hangs(code);
  return code;
}

}  // namespace troupe
