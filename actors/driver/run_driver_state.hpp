// The run driver's state and the functions its handlers share (run_driver.cpp: start and
// handlers; driver_actions.cpp: carrying out a strategy's actions; driver_ending.cpp: how a run
// ends). Internal to the driver.
#pragma once

#include "actors/driver/run_driver.hpp"
#include "actors/driver/worker_roster.hpp"
#include "core/checkpoint/checkpoint_schedule.hpp"
#include "core/checkpoint/checkpoint_writer.hpp"
#include "core/optim/outer_optimizer.hpp"
#include "core/policy/membership_machine.hpp"
#include "core/policy/step_release.hpp"
#include "core/policy/step_strategy.hpp"
#include "core/policy/step_watch.hpp"
#include "core/run/replica_digests.hpp"
#include "core/train/divergence_watch.hpp"
#include "core/train/run_report.hpp"
#include "core/train/run_tracker.hpp"
#include "core/train/validation_keeper.hpp"

#include <ATen/core/Tensor.h>
#include <caf/send.hpp>
#include <caf/typed_response_promise.hpp>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace troupe {

/// Tensors a worker sent with an event, kept until an action names them.
struct held_tensors {
  at::Tensor tensor;   ///< a gradient, or weights to average
  at::Tensor momenta;  ///< local_sgd with averaged momenta; else undefined
};

/// Where the run stands with its membership (cluster.on_node_loss "continue";
/// driver_membership.cpp). Present in every replica run: inside one process nothing is lost.
/// The decisions are the machine's (core/policy/membership_machine); the rest is what the
/// driver keeps to carry them out.
struct membership_state {
  explicit membership_state(membership_machine m) : machine(std::move(m)) {}

  membership_machine machine;
  /// After a regroup that admitted a replacement: the replicas' digests of their weights,
  /// compared once all are in (core/run/replica_digests).
  std::optional<replica_digest_check> digest_check;
  /// Workers given up on: their down messages and anything they still send are ignored.
  std::set<caf::actor_addr> departed;
  /// By rank: run time of the last message from its worker (a loss's detection time).
  std::vector<double> last_heard;
  /// Ranks asked for their state to go into a checkpoint now (below min_nodes, at the end).
  std::set<int64_t> checkpoint_handovers;
  int64_t state_bytes = 0;  ///< of the last state handed over
  /// async: weights held back while too few nodes are live, handed out once enough are.
  std::vector<act::hand_out> deferred_hand_outs;
  int64_t dropped = 0;  ///< messages from workers given up on, or of an old epoch
};

/// A checkpoint asked for and not yet handed to the writer.
struct pending_checkpoint {
  std::vector<part_state> parts;  ///< as they arrive
  nlohmann::json tracker;         ///< the tracker's figures once the step (and its evaluation)
                                  ///< is recorded; null before
  /// The outer optimizer's state when the step completed (a later average may come before the
  /// checkpoint is complete: its evaluation, a slow part).
  at::Tensor outer_base;
  at::Tensor outer_momentum;
  at::Tensor average_base;  ///< compression's base then (run_checkpoint::average_base)
};

struct run_driver_state {
  driver_options options;
  const run_plan* plan = nullptr;  ///< options.context->plan
  std::unique_ptr<step_strategy> strategy;
  std::optional<worker_roster> roster;
  std::optional<run_tracker> tracker;
  std::vector<held_tensors> held;  ///< by rank
  /// local_sgd with parallelism.compression: the last average, as every replica holds it;
  /// undefined (send the average whole) until the first and after a regroup.
  at::Tensor average_base;
  /// local_sgd with parallelism.outer_optimizer: DiLoCo's outer step, on the weights every
  /// replica started the round from.
  std::optional<outer_optimizer> outer;
  parameter_server_actor server;          ///< when the plan has a parameter server
  double reduce_s = 0;                    ///< combining, since the last completed step
  bool begun = false;                     ///< every worker was there once: training started
  bool training_done = false;             ///< the strategy said every step is complete
  std::vector<at::Tensor> final_weights;  ///< by worker (or [0]: the server's)
  /// keep_best and early stopping: the evaluations' verdicts and the weights they keep.
  std::optional<validation_keeper> keeper;
  int64_t weights_received = 0;
  caf::typed_response_promise<run_report> promise;
  bool finished = false;
  /// Replica workers (but async's) run the steps the driver releases (step_release.hpp).
  std::optional<step_release> release;
  /// With a checkpoint directory: when checkpoints are due, who writes them, and those asked
  /// for that are not all in yet, by step.
  std::optional<checkpoint_schedule> checkpoints;
  std::unique_ptr<checkpoint_writer> writer;
  std::map<int64_t, pending_checkpoint> pending_checkpoints;
  /// A checkpoint came due after a step with a streaming fragment's average in flight: it is
  /// taken after the first step released with none (driver_checkpoints.cpp).
  bool checkpoint_owed = false;
  /// A stop request with checkpoints: the run ends once the checkpoint after this step is
  /// written, and nothing past it is started.
  std::optional<int64_t> stop_at;
  /// Runs across processes (or with cluster.step_timeout_s): no step for too long ends the run.
  std::optional<step_watch> watch;
  /// The watchdog asked the workers what they do (probes) at this run time; their answers.
  std::optional<double> probed_at;
  std::map<int64_t, worker_probe> probes;
  /// Replica runs: the live workers, regroups, replacements (driver_membership.cpp).
  std::optional<membership_state> members;
  /// Why the run ends once the checkpoint of `stop_at` is written ("": a stop request).
  std::string end_reason;
  /// Ends the run as diverged when the loss stays far above its first value.
  divergence_watch divergence;
  /// A stacked ensemble: each member, with its figures at the latest evaluation.
  std::vector<member_report> ensemble_members;
  static inline const char* name = "run_driver";
};

using driver_pointer = run_driver_actor::stateful_pointer<run_driver_state>;

/// Sends a worker a message as the driver. Workers of both kinds (replicas, stages) sit in one
/// roster of untyped handles, which CAF's typed send() refuses; unsafe_send_as skips only that
/// static check, and the sender is still the driver (workers across processes check it).
template <class... Ts>
void tell(driver_pointer self, const caf::actor& to, Ts&&... xs) {
  caf::unsafe_send_as(self, to, std::forward<Ts>(xs)...);
}

/// Carries out `actions` in order; stops early once the run has finished.
void execute(driver_pointer self, step_actions actions);

/// Ends the run: answers the run request, tells every worker (and the server) to exit, quits.
/// `error` empty: succeeded, with `weights`; else the run ends with status `failed_as`.
/// Idempotent.
void finish(driver_pointer self, const std::string& error, at::Tensor weights = {},
            run_status failed_as = run_status::failed);
/// The same for a message that broke the protocol (errc::protocol_error).
void fail_protocol(driver_pointer self, const std::string& what);
/// Ends the run successfully once training is done, the last evaluation is recorded and every
/// final weight is in and agrees.
void maybe_succeed(driver_pointer self);
/// Feeds the keeper part of the weights evaluated after `step`; ends the run if early stopping
/// decided to stop there.
void take_snapshot(driver_pointer self, int64_t step, int64_t part, const at::Tensor& weights);
/// Ends the run (successfully) once early stopping decided and the weights it stops with are in.
void maybe_stop_early(driver_pointer self);
/// Keeps final weights from `rank` (or, with a parameter server, its weights as rank 0).
void take_final_weights(driver_pointer self, int64_t rank, const at::Tensor& weights);
// driver_checkpoints.cpp: the release window, checkpoints, resuming, and a stop request.

/// The run's first steps (a strategy's act::compute): replica workers get the release window's
/// steps, with a checkpoint announced where one is due; stages get the step.
void release_steps(driver_pointer self, const act::compute& a);
/// A step completed and was recorded: slides the window, asks for a checkpoint due after it,
/// records the checkpoints written, and honors a stop request.
void after_step_complete(driver_pointer self, int64_t step);
/// The evaluation after `step`, or the weights it evaluated, are in: a checkpoint of that step
/// takes the figures and may now be complete.
void after_evaluation(driver_pointer self, int64_t step);
/// A part of the state after `step`: rank, stage, or the server's 0.
void take_checkpoint_part(driver_pointer self, int64_t step, int64_t part, at::Tensor weights,
                          std::string optimizer);
/// Every worker is there (and the server), before the first step: sets up the release window
/// and the checkpoints; a resumed run hands each worker its part of the checkpoint, and the
/// tracker and keeper their figures.
void begin_checkpoints(driver_pointer self);
/// The run ends: waits for the checkpoints being written and records them.
void close_checkpoints(driver_pointer self);

// driver_watch.cpp: nothing waits for ever (core/policy/step_watch.hpp).

/// Starts the watch with the first step, where the run has one.
void begin_watch(driver_pointer self);
/// Worker `rank` reported on its step `step`; step `step` completed.
void watch_heard(driver_pointer self, int64_t rank, int64_t step);
void watch_completed(driver_pointer self, int64_t step);
/// The tick: ends the run when no step completed within the limit, else ticks again.
void check_progress(driver_pointer self);
/// "2.5 s", "40 s".
std::string fmt_seconds(double s);

/// The down handler and exception handler: a worker, the server or the driver itself failing
/// ends the run naming it and why (a lost node, under cluster.on_node_loss "continue", does
/// not: lose_node).
void end_run_on_failures(driver_pointer self);

// driver_membership.cpp: lost nodes, regroups, waiting for replacements, joins.

/// Sets up the membership of a replica run (every rank live, epoch 0).
void begin_membership(driver_pointer self);
/// Whether the run carries on when a node is lost (cluster.on_node_loss "continue", replicas).
bool carries_on(const run_driver_state& st);
/// The live ranks (every rank of runs without a membership).
std::vector<int64_t> live_ranks(const run_driver_state& st);
/// Whether a message claiming to come from worker `rank` does: from its current worker, not
/// one given up on (or the parameter server, which reports as worker 0).
bool from_current_worker(driver_pointer self, int64_t rank);
/// The node hosting `rank` is lost (`why`): under "continue" the run carries on without it,
/// else it ends. `by_watch`: the step watchdog named it (its connection may still be up: it is
/// told to leave).
void lose_node(driver_pointer self, int64_t rank, const std::string& why, bool by_watch);
/// The strategy asked for a regroup.
void want_regroup(driver_pointer self, const act::regroup& a);
/// A step completed: a drain may be over.
void membership_step_complete(driver_pointer self, int64_t step);
/// Carries out what the membership machine answered an event with. `loss_why`: why the node
/// was lost, for the records of a lose_node's actions.
void execute_membership(driver_pointer self, member_actions actions,
                        const std::string& loss_why = {});
/// The last step released to the workers (a drain waits for it).
int64_t released_through(const run_driver_state& st);
/// Whether steps may be released now (no regroup under way or wanted, not waiting for nodes).
bool may_release(const run_driver_state& st);
/// The membership of a replica run.
inline membership_state& mstate(driver_pointer self) {
  return *self->state.members;
}
/// A line for the coordinator's log (cluster runs; nothing inside one process).
void log_line(const run_driver_state& st, const std::string& line);

// driver_regroup_answers.cpp: the workers' answers during a regroup and a wait.

void on_regroup_answer(driver_pointer self, int64_t epoch, int64_t rank, int64_t applied,
                       bool has_state);
void on_handover(driver_pointer self, int64_t epoch, int64_t rank, int64_t step,
                 const at::Tensor& weights, const std::string& optimizer);
void on_state_taken(driver_pointer self, int64_t epoch, int64_t rank, int64_t step);
/// A replica's digest of its weights, asked for after a join.
void on_weights_digest(driver_pointer self, int64_t epoch, int64_t rank, int64_t step,
                       const std::string& digest);
void on_wait_deadline(driver_pointer self, int64_t epoch);
/// No replacement came in time: the run ends, after a checkpoint of the step the survivors
/// are parked at where one can be written.
void give_up_waiting(driver_pointer self, const mact::give_up_waiting& a);

// driver_ring_forming.cpp: the socket ring formed again at a regroup.

/// Forms the socket ring among the live ranks for the regroup under way, where the run's nodes
/// sum over it (driver_options::socket_ring), then completes the regroup.
void form_ring_then_complete(driver_pointer self);
/// The regroup under way is over (its state everywhere, the ring formed): the run goes on.
void complete_regroup(driver_pointer self);

// driver_replacements.cpp: a node that joins to replace a lost one.

void on_replacement(driver_pointer self, const replacement_node& node);

}  // namespace troupe
