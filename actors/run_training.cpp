#include "actors/run_training.hpp"

#include "actors/coordinator.hpp"
#include "actors/pipeline_coordinator.hpp"
#include "core/data/batch_plan.hpp"
#include "core/train/replica_engine.hpp"
#include "core/train/stage_engine.hpp"
#include "messages/error_code.hpp"

#include <ATen/Parallel.h>
#include <caf/all.hpp>

namespace troupe {
namespace {

caf::actor_system_config& configure(caf::actor_system_config& cfg) {
  // One cooperative thread is plenty: only the coordinator runs there, the replicas have their
  // own threads. "sharing" sleeps on a condition variable instead of busy-polling, which would
  // take CPU from the replicas on a machine with as many cores as replicas.
  cfg.set("scheduler.max-threads", 1);
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.add_message_types<caf::id_block::troupe>();
  add_error_category(cfg);
  return cfg;
}

}  // namespace

run_report run_training(const job_config& job, dataset_ptr data, const run_options& options) {
  // Threads that have not run an ATen op yet take this default: the coordinator's reductions
  // stay on its one thread, and each replica sets its own team size.
  at::set_num_threads(1);
  auto setup = std::make_shared<replica_setup>();
  setup->job = job;
  setup->initial_weights = initial_weights(job, data->classes);
  setup->data = std::move(data);

  const batch_plan plan(setup->data->train.size(), job.training.batch_size, job.seed);
  setup->steps_per_epoch = plan.steps_per_epoch();
  setup->total_steps =
      job.training.steps > 0 ? job.training.steps : job.training.epochs * plan.steps_per_epoch();
  setup->schedule.emplace(job, setup->total_steps, setup->steps_per_epoch);
  if (job.parallelism.pipelined())
    setup->stage_slices = stage_slices(job, setup->data->classes);
  coordinator_options copts;
  copts.setup = setup;
  copts.metrics = options.metrics;
  copts.on_progress = options.on_progress;
  copts.stop_requested = options.stop_requested;

  caf::actor_system_config cfg;
  caf::actor_system system{configure(cfg)};
  run_report report;
  {
    caf::scoped_actor self{system};
    auto coord =
        job.parallelism.pipelined()
            ? caf::actor_cast<caf::actor>(spawn_pipeline_coordinator(system, std::move(copts)))
            : caf::actor_cast<caf::actor>(spawn_coordinator(system, std::move(copts)));
    self->monitor(coord);
    self->send(coord, run_atom_v);
    bool done = false;
    while (!done) {
      // The coordinator always answers; the down_msg covers it dying without an answer.
      self->receive(
          [&](run_report& r) {
            report = std::move(r);
            done = true;
          },
          [&](caf::down_msg& msg) {
            if (!done) {
              report.status = "failed";
              report.error = "coordinator stopped: " + system.render(msg.reason);
              done = true;
            }
          },
          [&](caf::error& err) {
            report.status = "failed";
            report.error = "coordinator: " + system.render(err);
            done = true;
          });
    }
  }
  system.await_all_actors_done();
  return report;
}

}  // namespace troupe
