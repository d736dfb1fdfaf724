#include "actors/run_training.hpp"

#include "actors/coordinator.hpp"
#include "actors/pipeline_coordinator.hpp"
#include "actors/system_config.hpp"

#include <ATen/Parallel.h>
#include <caf/all.hpp>

namespace troupe {

coordinator_options make_coordinator_options(std::shared_ptr<const replica_setup> setup,
                                             const run_options& options) {
  coordinator_options copts;
  copts.setup = std::move(setup);
  copts.metrics = options.metrics;
  copts.on_progress = options.on_progress;
  copts.stop_requested = options.stop_requested;
  return copts;
}

run_report run_coordinator(caf::actor_system& system, const caf::actor& coordinator) {
  run_report report;
  caf::scoped_actor self{system};
  self->monitor(coordinator);
  self->send(coordinator, run_atom_v);
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
  return report;
}

run_report run_training(const job_config& job, dataset_ptr data, const run_options& options) {
  // Threads that have not run an ATen op yet take this default: the coordinator's reductions
  // stay on its one thread, and each replica sets its own team size.
  at::set_num_threads(1);
  auto copts = make_coordinator_options(make_replica_setup(job, std::move(data)), options);
  caf::actor_system_config cfg;
  caf::actor_system system{configure_system(cfg)};
  const auto coord =
      job.parallelism.pipelined()
          ? caf::actor_cast<caf::actor>(spawn_pipeline_coordinator(system, std::move(copts)))
          : caf::actor_cast<caf::actor>(spawn_coordinator(system, std::move(copts)));
  auto report = run_coordinator(system, coord);
  system.await_all_actors_done();
  return report;
}

}  // namespace troupe
