#include "actors/workers/sharded_server.hpp"

#include "actors/workers/server_evaluation.hpp"
#include "actors/workers/server_shard.hpp"
#include "core/optim/optimizer_bytes.hpp"
#include "core/run/thread_team.hpp"
#include "core/train/replica_engine.hpp"
#include "messages/error_code.hpp"

#include <ATen/ATen.h>
#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace troupe {

struct gathering {
  std::vector<bool> have;
  std::function<void(std::size_t)> ask;
};

struct sharded_server_state {
  context_ptr context;
  run_driver_actor driver;
  std::vector<caf::actor> hosts;  ///< node agents that start the shards; empty: here
  std::vector<server_shard_actor> shards;
  std::unique_ptr<replica_engine> evaluator;  ///< the gathered weights, evaluated
  /// By rank: the last hand-out whose push has not been applied, sent again to a new shard.
  std::map<int64_t, hand_out> owed;
  /// The workers told the shards (each at its first hand-out, all again after a replacement).
  std::map<caf::actor_addr, caf::actor> told;
  /// Where a lost shard starts again: the newest whole weights seen (an evaluation's, a
  /// checkpoint's, the resumed ones) and the newest optimizer state (a checkpoint's, the
  /// resumed one; empty before any: a fresh optimizer).
  restored_state last_state;
  int64_t optimizer_step = -1;                  ///< the step of last_state.optimizer
  std::function<void(const std::string&)> log;  ///< the coordinator's log; may be empty
  /// Questions to every shard still open (gather), by number: which shards answered, and how
  /// to ask shard k again.
  std::map<int64_t, std::shared_ptr<gathering>> gatherings;
  int64_t next_gathering = 0;
  /// Shards replaced: their exits, when they come, are not the driver's.
  std::set<caf::actor_addr> replaced;
  static inline const char* name = "sharded_server";
};

namespace {

using self_pointer = parameter_server_actor::stateful_pointer<sharded_server_state>;

std::vector<caf::actor> shard_list(const sharded_server_state& st) {
  std::vector<caf::actor> out;
  for (const auto& s : st.shards)
    out.push_back(caf::actor_cast<caf::actor>(s));
  return out;
}

void fail(self_pointer self, const std::string& why) {
  self->quit(caf::make_error(caf::sec::runtime_error, "parameter server: " + why));
}

void adopt_shard(self_pointer self, int64_t k, const caf::actor& shard) {
  auto& st = self->state;
  st.shards[static_cast<std::size_t>(k)] = caf::actor_cast<server_shard_actor>(shard);
  // A shard here is linked: it ends with this server. One on a node is monitored, not linked:
  // its node's agent ends it with the run, so this server need not send it an exit across the
  // middleman at the end.
  if (shard.node() == self->node())
    self->link_to(shard);
  else
    self->monitor(shard);
}

// Shard `k`, lost, starts again here from its slice of the newest state this server gathered
// (sharded_server.hpp); the workers learn of it, the hand-outs it owed go out again (a worker
// drops a slice it has), and the questions it did not answer are asked again.
void replace_shard(self_pointer self, int64_t k) {
  auto& st = self->state;
  st.replaced.insert(st.shards[static_cast<std::size_t>(k)].address());
  adopt_shard(self, k,
              caf::actor_cast<caf::actor>(spawn_server_shard(self->system(), st.context, k)));
  auto& shard = st.shards[static_cast<std::size_t>(k)];
  if (st.last_state.weights.defined())
    self->send(shard, restore_atom_v, st.last_state);
  if (st.log)
    st.log("parameter server shard " + std::to_string(k) + " lost; started again here from " +
           (st.last_state.weights.defined()
                ? "the weights of step " + std::to_string(st.last_state.step)
                : std::string("the run's first weights")) +
           (st.optimizer_step >= 0
                ? " and the optimizer state of step " + std::to_string(st.optimizer_step)
                : std::string(" and a fresh optimizer state")));
  const auto list = shard_list(st);
  for (const auto& [address, worker] : st.told)
    self->send(caf::actor_cast<replica_worker_actor>(worker), link_atom_v, list);
  for (const auto& [rank, h] : st.owed)
    self->send(shard, hand_out_atom_v, h);
  for (const auto& [id, g] : st.gatherings)
    if (!g->have[static_cast<std::size_t>(k)])
      g->ask(static_cast<std::size_t>(k));
}

// Which shard an exit came from, or -1.
int64_t shard_of(const sharded_server_state& st, const caf::actor_addr& source) {
  for (std::size_t k = 0; k < st.shards.size(); ++k)
    if (st.shards[k].address() == source)
      return static_cast<int64_t>(k);
  return -1;
}

void on_shard_exit(self_pointer self, int64_t k, const caf::error& reason) {
  if (!self->state.context->plan->job.cluster.carries_on())
    return fail(self,
                "shard " + std::to_string(k) + " ended (" + self->system().render(reason) + ")");
  replace_shard(self, k);
}

// Asks every shard the same question and gives `done` the answers in shard order. A shard
// replaced before it answered is asked again (replace_shard): a request to a node that was lost
// may never be answered at all.
template <class Reply, class Done, class... Ts>
void gather(self_pointer self, Done done, Ts... question) {
  auto& st = self->state;
  const auto id = st.next_gathering++;
  auto g = std::make_shared<gathering>();
  auto parts = std::make_shared<std::vector<Reply>>(st.shards.size());
  g->have.assign(st.shards.size(), false);
  g->ask = [self, id, parts, done, question...](std::size_t k) {
    auto asked = self->state.shards[k];
    self->request(asked, caf::infinite, question...)
        .then(
            [self, id, parts, done, k](Reply& r) mutable {
              auto& gatherings = self->state.gatherings;
              auto it = gatherings.find(id);
              if (it == gatherings.end() || it->second->have[k])
                return;  // answered already (by the shard that replaced this one, or it)
              it->second->have[k] = true;
              (*parts)[k] = std::move(r);
              if (std::find(it->second->have.begin(), it->second->have.end(), false) !=
                  it->second->have.end())
                return;
              gatherings.erase(it);
              done(*parts);
            },
            [self, k, asked](caf::error& e) {
              auto& st = self->state;
              if (!st.context->plan->job.cluster.carries_on())
                return fail(self, "shard " + std::to_string(k) + " did not answer (" +
                                      self->system().render(e) + ")");
              if (st.shards[k] == asked)  // gone, and its exit not yet here
                replace_shard(self, static_cast<int64_t>(k));
            });
  };
  st.gatherings.emplace(id, g);
  for (std::size_t k = 0; k < st.shards.size(); ++k)
    g->ask(k);
}

at::Tensor joined_weights(const std::vector<at::Tensor>& slices) {
  return at::cat(slices);
}

void evaluate(self_pointer self, int64_t step) {
  gather<at::Tensor>(
      self,
      [self, step](const std::vector<at::Tensor>& slices) {
        auto& st = self->state;
        if (!st.evaluator)
          st.evaluator = make_server_engine(*st.context);
        st.last_state.step = step;
        st.last_state.weights = joined_weights(slices);  // a new tensor: set_weights copies it
        st.evaluator->set_weights(st.last_state.weights);
        evaluate_server(self, *st.evaluator, *st.context, st.driver, step);
      },
      weights_atom_v);
}

void checkpoint(self_pointer self, int64_t step) {
  gather<checkpoint_part>(
      self,
      [self, step](const std::vector<checkpoint_part>& parts) {
        auto& st = self->state;
        std::vector<at::Tensor> slices;
        std::vector<std::string> states;
        for (const auto& part : parts) {
          slices.push_back(part.weights);
          states.push_back(part.optimizer);
        }
        st.last_state = {step, joined_weights(slices), join_optimizer_bytes(states), at::Tensor()};
        st.optimizer_step = step;
        self->send(st.driver, checkpoint_atom_v,
                   checkpoint_part{step, 0, st.last_state.weights, st.last_state.optimizer});
      },
      checkpoint_atom_v, step);
}

void start_shards(self_pointer self) {
  auto& st = self->state;
  const auto count = st.context->plan->server_shards();
  st.shards.resize(static_cast<std::size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    if (st.hosts.empty()) {
      adopt_shard(self, k,
                  caf::actor_cast<caf::actor>(spawn_server_shard(self->system(), st.context, k)));
      continue;
    }
    const auto& agent = st.hosts[static_cast<std::size_t>(k) % st.hosts.size()];
    // Awaited: nothing of the driver's is passed on before every shard is there.
    self->request(agent, std::chrono::seconds(60), caf::spawn_atom_v, shard_atom_v, k)
        .await([self, k](caf::actor& shard) { adopt_shard(self, k, shard); },
               [self, k](caf::error& e) {
                 fail(self, "could not start shard " + std::to_string(k) + ": " +
                                self->system().render(e));
               });
  }
}

parameter_server_actor::behavior_type sharded_server(self_pointer self, context_ptr context,
                                                     run_driver_actor driver,
                                                     std::vector<caf::actor> hosts,
                                                     std::function<void(const std::string&)> log) {
  use_plan_threads(*context->plan);  // the evaluation's, as the workers' (thread_team.hpp)
  auto& st = self->state;
  st.context = std::move(context);
  st.driver = std::move(driver);
  st.hosts = std::move(hosts);
  st.log = std::move(log);
  self->set_exception_handler(
      [](caf::scheduled_actor*, std::exception_ptr& ep) { return make_error_from_exception(ep); });
  self->set_exit_handler([self](caf::exit_msg& msg) {
    if (const auto k = shard_of(self->state, msg.source); k >= 0)
      return on_shard_exit(self, k, msg.reason);
    if (self->state.replaced.count(msg.source) > 0)
      return;                // a shard already replaced (its request failed first)
    self->quit(msg.reason);  // the driver's: the linked shards end too
  });
  self->set_down_handler([self](caf::down_msg& msg) {
    if (const auto k = shard_of(self->state, msg.source); k >= 0)
      on_shard_exit(self, k, msg.reason);  // else a shard already replaced
  });
  start_shards(self);
  return {
      [self](apply_atom, double lr, int64_t rank, const at::Tensor& gradient) {
        auto& st = self->state;
        st.owed.erase(rank);
        for (const auto& shard : st.shards)
          self->send(shard, apply_atom_v, lr, rank, gradient);
      },
      [self](hand_out_atom, const hand_out& h) {
        auto& st = self->state;
        if (st.told.emplace(h.worker.address(), h.worker).second)
          self->send(caf::actor_cast<replica_worker_actor>(h.worker), link_atom_v, shard_list(st));
        st.owed[h.rank] = h;
        for (const auto& shard : st.shards)
          self->send(shard, hand_out_atom_v, h);
      },
      [self](evaluate_atom, int64_t step) { evaluate(self, step); },
      [self](weights_atom) {
        auto promise = self->make_response_promise<at::Tensor>();
        gather<at::Tensor>(
            self,
            [promise](const std::vector<at::Tensor>& slices) mutable {
              promise.deliver(joined_weights(slices));
            },
            weights_atom_v);
        return promise;
      },
      [self](checkpoint_atom, int64_t step) { checkpoint(self, step); },
      [self](restore_atom, const restored_state& r) {
        auto& st = self->state;
        st.last_state = r;
        st.optimizer_step = r.step;
        for (const auto& shard : st.shards)
          self->send(shard, restore_atom_v, r);
      },
  };
}

}  // namespace

parameter_server_actor spawn_sharded_server(caf::actor_system& system, context_ptr context,
                                            run_driver_actor driver,
                                            std::vector<caf::actor> shard_hosts,
                                            std::function<void(const std::string&)> log) {
  return system.spawn<caf::detached>(sharded_server, std::move(context), std::move(driver),
                                     std::move(shard_hosts), std::move(log));
}

}  // namespace troupe
