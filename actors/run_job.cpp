#include "actors/run_job.hpp"

#include "actors/run_cluster.hpp"
#include "actors/run_driver.hpp"
#include "actors/system_config.hpp"
#include "core/errors.hpp"
#include "core/train/run_ensemble.hpp"

#include <ATen/Parallel.h>
#include <caf/all.hpp>

namespace troupe {
namespace {

run_report run_in_process(const run_plan& plan, dataset_ptr data, const run_options& options) {
  // Threads that have not run an ATen op yet take this default: the driver's reductions stay
  // on its one thread, and each worker sets its own team size.
  at::set_num_threads(1);
  driver_options d;
  d.context = make_worker_context(plan, std::move(data));
  d.run = options;
  caf::actor_system_config cfg;
  caf::actor_system system{configure_system(cfg)};
  auto report = await_report(system, spawn_run_driver(system, std::move(d)));
  system.await_all_actors_done();
  return report;
}

}  // namespace

run_report await_report(caf::actor_system& system, const run_driver_actor& driver) {
  run_report report;
  caf::scoped_actor self{system};
  self->monitor(driver);
  self->send(driver, run_atom_v);
  bool done = false;
  while (!done) {
    // The driver always answers; the down_msg covers it dying without an answer.
    self->receive(
        [&](run_report& r) {
          report = std::move(r);
          done = true;
        },
        [&](caf::down_msg& msg) {
          report.status = run_status::failed;
          report.error = "coordinator stopped: " + system.render(msg.reason);
          done = true;
        },
        [&](caf::error& err) {
          report.status = run_status::failed;
          report.error = "coordinator: " + system.render(err);
          done = true;
        });
  }
  return report;
}

run_report run_job(const run_plan& plan, dataset_ptr data, const run_options& options) {
  check_data_matches(plan.data, *data, plan.job.data);
  if (plan.mode == run_mode::ensemble)
    return run_ensemble(plan, std::move(data), options);
  if (!plan.job.cluster.enabled())
    return run_in_process(plan, std::move(data), options);
  if (!options.cluster)
    throw job_error({"/cluster/nodes: a job for " + std::to_string(plan.job.cluster.nodes) +
                     " node(s) needs an address to wait for them on"});
  return run_cluster(plan, std::move(data), options);
}

run_report plan_and_run(const job_config& job, dataset_ptr data, const run_options& options) {
  const auto plan = make_run_plan(job, facts_of(*data));
  return run_job(plan, std::move(data), options);
}

}  // namespace troupe
