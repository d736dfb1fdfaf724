// The async policy as a strategy: a parameter server with a stale-synchronous bound
// (async_policy decides who may go on). A run is replicas x steps pushes, from whichever workers
// are quickest (fast workers contribute more: that is the point of not waiting for stragglers).
//
//   start:   every worker pulls: the server hands out its weights (hand_out), or the bound
//            holds the worker back until a push releases it;
//   on_push: the server applies the gradient at once (apply_push); every `ranks` pushes make
//            one global step (the samples of a sync step), after which the server evaluates
//            when the rules say so; workers the push released get weights (waited, hand_out);
//            the pusher pulls again; after the last push, training is done.
//   a lost worker (cluster.on_node_loss "continue"): it leaves the staleness clock at once,
//            releasing whoever waited for it; the push it owed is handed to another worker.
//            A replacement enters at the slowest live clock and pulls.
//
// Thread safety: none; owned by the run driver.
#pragma once

#include "core/policy/async_policy.hpp"
#include "core/policy/step_strategy.hpp"

#include <optional>
#include <vector>

namespace troupe {

class async_strategy : public step_strategy {
 public:
  /// `lr_scaling`: a gradient of staleness k is applied with lr / (1 + k).
  /// `first_step` > 0: a resumed run, whose server already applied first_step x ranks pushes;
  /// every worker starts at that clock.
  async_strategy(int64_t ranks, std::optional<int64_t> max_staleness, bool lr_scaling,
                 const step_rules& rules, int64_t first_step = 0);

  const char* name() const override { return "async"; }
  step_actions start() override;
  step_actions on_push(const arrival& a, double now_s) override;
  step_actions on_worker_left(int64_t rank) override;
  step_actions on_worker_joined(int64_t rank, double now_s) override;

 private:
  int64_t total_pushes() const { return rules_.total_steps() * ranks_; }
  void pull(int64_t rank, double now_s, step_actions& out);
  void hand_out(int64_t rank, step_actions& out);
  void release(const std::vector<std::size_t>& ranks, double now_s, step_actions& out);

  int64_t ranks_;
  bool lr_scaling_;
  step_rules rules_;
  async_policy policy_;
  std::vector<double> waiting_since_;  ///< by rank, on the driver's clock
  std::vector<bool> handed_out_;       ///< by rank: has weights and owes a push
  /// By rank: pulled once every push was owed, so got nothing; a push a lost worker owed goes
  /// to one of these.
  std::vector<bool> starved_;
  std::vector<step_part> parts_;  ///< pushes since the last completed global step
  double last_now_ = 0;           ///< the driver's clock at the last push (a departure has none)
  int64_t issued_ = 0;            ///< weights handed out, each owed one push (at most total_pushes)
};

}  // namespace troupe
