// A policy as the run driver sees it: a pure strategy, fed the events of a run and answering
// with what to do. No threads, no actors, no tensors (the driver keeps the tensors that came
// with an event, by rank, until a `combine` or `apply_push` names them). Every decision about
// when a step is complete, who contributes to a sum, when to evaluate and who may go on lives
// in a strategy; the driver only carries the actions out, in order.
//
// Strategies: sync_strategy, local_sgd_strategy and schedule_strategy (phases of both) for
// data-parallel replicas, async_strategy (a parameter server with a staleness bound) and
// pipeline_strategy (stages flushing every step). core/run/make_strategy picks one from the
// plan.
//
// Thread safety: none; each strategy is owned by one run driver.
#pragma once

#include "core/job/job_config.hpp"
#include "core/policy/step_rules.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace troupe {

/// What a worker sent (its tensor stays with the driver): whose, for which step, and its part.
struct arrival {
  int64_t rank = 0;
  int64_t step = 0;
  double loss = 0;
  int64_t samples = 0;
  /// A report's time since the worker's previous step ended (0: not measured).
  double span_s = 0;
  /// A report of a sum among the workers: the rows the sum held (step_part::sum_rows).
  int64_t sum_rows = 0;
};

namespace act {

/// Send (compute, step) to these ranks.
struct compute {
  int64_t step = 0;
  std::vector<int64_t> ranks;
};

/// Combine the tensors the driver holds for `from`, in that order, and send the result to `to`
/// with `outcome`. Gradients are summed (then applied by each receiver); weights (local SGD)
/// are averaged with `weights` (each rank's share of the rows), their momenta too when sent.
struct combine {
  enum class what { gradients, weights };
  what kind = what::gradients;
  std::vector<int64_t> from;
  std::vector<double> weights;  ///< weights only: one per `from`
  std::vector<int64_t> to;
  step_outcome outcome;
};

/// Step `step` is complete with these parts (in worker order). When the next step runs under
/// another policy (a schedule's phase boundary), `switches_to` says which.
struct complete {
  int64_t step = 0;
  std::vector<step_part> parts;
  std::optional<policy_kind> switches_to;
};

/// Evaluate after `step`: these ranks start it (pipelines: the first stages), or, with no
/// ranks, the parameter server evaluates its weights.
struct evaluate {
  int64_t step = 0;
  std::vector<int64_t> ranks;
};

/// async: the parameter server applies the gradient `rank` pushed (held by the driver) with the
/// rate of `global_step` times `lr_scale`.
struct apply_push {
  int64_t rank = 0;
  double lr_scale = 1;
  int64_t step = 0;  ///< the pusher's step (its clock before this push)
  int64_t version = 0;
  int64_t staleness = 0;
  int64_t global_step = 0;  ///< the step this push belongs to: every `ranks` pushes make one
};

/// async: the parameter server sends `rank` its current weights to compute `step` on.
struct hand_out {
  int64_t rank = 0;
  int64_t version = 0;
  int64_t step = 0;
};

/// async: `rank` was held back by the staleness bound for `wait_s` at clock `clock`.
struct waited {
  int64_t rank = 0;
  int64_t clock = 0;
  double wait_s = 0;
};

/// local SGD: `rank` left; its weights went into the averages through `averaged_through`. The
/// count of rows trained (counted as steps complete) changes by `rows`, as (step, rows): less
/// the rows it reported since, which no average will hold, plus those of the averaging step its
/// weights went into but whose report never came (run_tracker::recount).
struct recount {
  int64_t rank = 0;
  int64_t averaged_through = -1;
  std::vector<std::pair<int64_t, int64_t>> rows;
};

/// Every step is complete: the driver collects the final weights.
struct training_done {};

/// The event broke the protocol: the run ends with this reason.
struct violation {
  std::string reason;
};

/// The policy cannot go on without a worker that left: the run ends.
struct cannot_continue {
  int64_t rank = 0;
};

/// The live workers changed (a node was lost): the driver regroups them (actors/
/// driver_membership.cpp: each learns the new membership, those behind receive the state of one
/// ahead) and then calls resume(). With `drain`, the steps already released complete first
/// (local SGD: its replicas step alone, nothing in flight is lost); without, the step in flight
/// is abandoned and redone by the survivors (sync: it needed the lost worker's gradient).
struct regroup {
  std::vector<int64_t> live;
  bool drain = false;
};

}  // namespace act

using step_action =
    std::variant<act::compute, act::combine, act::complete, act::evaluate, act::apply_push,
                 act::hand_out, act::waited, act::recount, act::training_done, act::violation,
                 act::cannot_continue, act::regroup>;
/// Carried out in order.
using step_actions = std::vector<step_action>;

class step_strategy {
 public:
  virtual ~step_strategy() = default;

  /// The policy's name, for messages ("sync", "async", ...).
  virtual const char* name() const = 0;
  /// The run begins: every worker is there.
  virtual step_actions start() = 0;
  /// A gradient to combine at the driver (sync with the driver as meeting point; a stage's
  /// gradient in a pipeline).
  virtual step_actions on_gradient(const arrival& a);
  /// Weights to average (local SGD).
  virtual step_actions on_weights(const arrival& a);
  /// async: a gradient pushed to the parameter server, at `now_s` on the driver's clock.
  virtual step_actions on_push(const arrival& a, double now_s);
  /// A worker finished its part of a step (its timings arrived).
  virtual step_actions on_report(const arrival& a);
  /// The evaluation after `step` is complete.
  virtual step_actions on_evaluated(int64_t step);
  /// A worker is gone (its node was lost). sync and local_sgd answer with what completes
  /// without it and a regroup; async lets whoever waited for it go on; the rest (pipelines)
  /// answer cannot_continue.
  virtual step_actions on_worker_left(int64_t rank);
  /// A regroup brought every live worker to the state after `after_step`: the steps up to it
  /// still open complete with the parts that came (a lost worker's are missing). Called where
  /// the survivors stop there, too few to go on (they may end the run with its checkpoint), and
  /// by resume(). The default has no steps open to complete.
  virtual step_actions close_through(int64_t after_step);
  /// After a regroup every worker of `live` holds the state after `after_step`: close_through,
  /// and `live` go on from the next step (none after the last). Only called after a regroup the
  /// strategy asked for.
  virtual step_actions resume(const std::vector<int64_t>& live, int64_t after_step);
  /// async: a replacement worker `rank` joined; it enters the staleness clock and pulls.
  virtual step_actions on_worker_joined(int64_t rank, double now_s);

 protected:
  /// A violation naming the unexpected event and the policy.
  step_actions unexpected(const std::string& what) const;
};

}  // namespace troupe
