// The run driver against fake workers: the branches real workers never reach. A worker that
// breaks the step protocol ends the run with errc::protocol_error naming what it sent and what
// was expected; replicas that end with different weights fail the run; a worker that dies is
// named. Each fake is a plain actor that speaks the replica protocol (messages/training_step.hpp)
// just wrongly enough; like a real replica, it runs the steps the driver released one after
// the other (core/policy/step_pace.hpp).
#include "actors/cluster/system_config.hpp"
#include "actors/driver/run_driver.hpp"
#include "actors/run_job.hpp"
#include "core/policy/step_pace.hpp"
#include "training_fixtures.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <caf/all.hpp>

#include <functional>
#include <string>
#include <vector>

using namespace troupe;

namespace {

/// How a fake replica runs a step: by default it answers with a zero gradient for that step.
struct fake_script {
  std::function<void(caf::event_based_actor*, const run_driver_actor&, int64_t rank, int64_t step)>
      on_compute;
  /// The final weights replica `rank` hands in.
  std::function<at::Tensor(int64_t rank)> final_weights;
};

caf::behavior fake_replica(caf::event_based_actor* self, run_driver_actor driver, int64_t rank,
                           int64_t parameters, fake_script script) {
  auto pace = std::make_shared<step_pace>();
  auto advance = [=] {
    if (!pace->may_start())
      return;
    const auto step = pace->begin();
    if (script.on_compute)
      return script.on_compute(self, driver, rank, step);
    self->send(driver, gradient_atom_v, gradient_meta{rank, step, 1.0, 16},
               at::zeros({parameters}));
  };
  return {
      [=](compute_atom, int64_t step) {
        pace->release(step);
        advance();
      },
      [](probe_atom) {},  // like a stuck worker, fakes do not answer the watchdog's probe
      [=](update_atom, const update_meta& meta, const at::Tensor&) {
        self->send(driver, step_stats{rank, meta.step, 1.0, 16, 0.0, 0.0, 0.0});
        if (meta.evaluate)
          self->send(driver, eval_report{rank, meta.step, 1.0, 1, 2, 0.0});
        pace->finish(meta.step);
        if (meta.last)
          self->send(driver, weights_atom_v, rank, script.final_weights(rank));
        else
          advance();
      },
  };
}

/// Runs the plan of `job` (2 replicas, sync) with fakes, their gradients meeting at the driver
/// (where real CPU replicas of one process would sum them among themselves).
run_report run_with_fakes(const job_config& job, fake_script script) {
  auto data = test::small_data(job);
  auto plan = make_run_plan(job, facts_of(*data));
  REQUIRE(plan.gradients == gradient_meeting::shared);
  plan.gradients = gradient_meeting::driver;
  const auto parameters = plan.model.parameters;
  driver_options options;
  options.context = make_worker_context(std::move(plan), std::move(data));
  options.spawn_local = [parameters, script](caf::actor_system& system, int64_t rank,
                                             run_driver_actor driver) {
    return system.spawn(fake_replica, std::move(driver), rank, parameters, script);
  };
  caf::actor_system_config cfg;
  caf::actor_system system{configure_system(cfg)};
  auto report = await_report(system, spawn_run_driver(system, std::move(options)));
  system.await_all_actors_done();
  return report;
}

fake_script agreeing() {
  fake_script s;
  s.final_weights = [](int64_t) { return at::zeros({4}); };
  return s;
}

}  // namespace

TEST_SUITE("driver") {
  TEST_CASE("fakes that follow the protocol succeed: the driver itself needs nothing more") {
    const auto r = run_with_fakes(test::small_job(2, 3), agreeing());
    REQUIRE_MESSAGE(r.succeeded(), r.error);
    CHECK(r.steps == 3);
    CHECK(*r.test_accuracy == doctest::Approx(0.5));  // 1 of 2 rows, from each shard
  }

  TEST_CASE("a gradient for the wrong step ends the run with a protocol error") {
    auto script = agreeing();
    script.on_compute = [](caf::event_based_actor* self, const run_driver_actor& driver,
                           int64_t rank, int64_t step) {
      self->send(driver, gradient_atom_v, gradient_meta{rank, step + rank * 5, 1.0, 16},
                 at::zeros({1}));
    };
    const auto r = run_with_fakes(test::small_job(2, 10), script);
    CHECK(r.status == run_status::failed);
    CHECK(r.error.find("protocol_error") != std::string::npos);
    CHECK(r.error.find("worker 1 sent a gradient for step 5, expected step 0") !=
          std::string::npos);
    CHECK(r.steps == 0);
  }

  TEST_CASE("a worker that goes silent ends the run after cluster.step_timeout_s, named") {
    // Replica 1 stops sending after step 2, as behind a link that passes heartbeats but no
    // gradient: nothing else would end the wait.
    auto script = agreeing();
    script.on_compute = [](caf::event_based_actor* self, const run_driver_actor& driver,
                           int64_t rank, int64_t step) {
      if (rank == 1 && step >= 3)
        return;
      self->send(driver, gradient_atom_v, gradient_meta{rank, step, 1.0, 16}, at::zeros({4}));
    };
    auto job = test::small_job(2, 10);
    job.cluster.step_timeout_s = 0.3;
    const auto r = run_with_fakes(job, script);
    CHECK(r.status == run_status::failed);
    INFO(r.error);
    CHECK(r.steps == 3);
    CHECK_MESSAGE(r.error.find("without a completed step since step 2 (the limit: 0.3 s, "
                               "cluster.step_timeout_s); furthest behind: worker 1, last heard "
                               "of at step 2") != std::string::npos,
                  r.error);
  }

  TEST_CASE("a report from a worker that does not exist ends the run with a protocol error") {
    auto script = agreeing();
    script.on_compute = [](caf::event_based_actor* self, const run_driver_actor& driver, int64_t,
                           int64_t step) {
      self->send(driver, step_stats{7, step, 1.0, 16, 0.0, 0.0, 0.0});
    };
    const auto r = run_with_fakes(test::small_job(2, 10), script);
    CHECK(r.error.find("protocol_error") != std::string::npos);
    CHECK(r.error.find("step stats from worker 7, there are 2") != std::string::npos);
  }

  TEST_CASE("report blocks: empty or longer than release_block_steps is a protocol error") {
    for (const std::size_t size : {std::size_t{0}, std::size_t(release_block_steps + 1)}) {
      CAPTURE(size);
      auto script = agreeing();
      script.on_compute = [size](caf::event_based_actor* self, const run_driver_actor& driver,
                                 int64_t rank, int64_t step) {
        self->send(driver,
                   std::vector<step_stats>(size, step_stats{rank, step, 1.0, 16, 0, 0, 0, 0}));
      };
      const auto r = run_with_fakes(test::small_job(2, 10), script);
      CHECK(r.error.find("protocol_error") != std::string::npos);
      CHECK(r.error.find("a block of " + std::to_string(size) +
                         " step reports; a worker sends 1 to " +
                         std::to_string(release_block_steps)) != std::string::npos);
    }
  }

  TEST_CASE("a gradient twice for one step, and a step beyond the run, are protocol errors") {
    auto twice = agreeing();
    twice.on_compute = [](caf::event_based_actor* self, const run_driver_actor& driver,
                          int64_t rank, int64_t step) {
      for (int i = 0; i < 2; ++i)
        self->send(driver, gradient_atom_v, gradient_meta{rank, step, 1.0, 16}, at::zeros({1}));
    };
    auto r = run_with_fakes(test::small_job(2, 10), twice);
    CHECK(r.error.find("protocol_error") != std::string::npos);
    CHECK(r.error.find("sent its gradient for step 0 twice") != std::string::npos);

    auto beyond = agreeing();
    beyond.on_compute = [](caf::event_based_actor* self, const run_driver_actor& driver,
                           int64_t rank, int64_t) {
      self->send(driver, gradient_atom_v, gradient_meta{rank, 99, 1.0, 16}, at::zeros({1}));
    };
    r = run_with_fakes(test::small_job(2, 10), beyond);
    CHECK(r.error.find("a gradient of step 99 from worker") != std::string::npos);
    CHECK(r.error.find("a worker runs at most 10 steps") != std::string::npos);
  }

  TEST_CASE("replicas that end with different weights fail the run, naming the first") {
    auto script = agreeing();
    script.final_weights = [](int64_t rank) { return rank == 1 ? at::ones({4}) : at::zeros({4}); };
    const auto r = run_with_fakes(test::small_job(2, 3), script);
    CHECK(r.status == run_status::failed);
    CHECK(r.error == "replica 1 ended with weights different from replica 0");
    CHECK(r.steps == 3);  // training itself completed
    CHECK(!r.final_weights.defined());
  }

  TEST_CASE("final weights handed in twice are a protocol error") {
    auto script = agreeing();
    script.on_compute = [](caf::event_based_actor* self, const run_driver_actor& driver,
                           int64_t rank, int64_t) {
      self->send(driver, weights_atom_v, rank, at::zeros({4}));
      self->send(driver, weights_atom_v, rank, at::zeros({4}));
    };
    const auto r = run_with_fakes(test::small_job(2, 3), script);
    CHECK(r.error.find("unexpected final weights from worker") != std::string::npos);
  }

  TEST_CASE("a worker that quits is named with its reason, and nothing waits") {
    auto script = agreeing();
    script.on_compute = [](caf::event_based_actor* self, const run_driver_actor&, int64_t rank,
                           int64_t) {
      if (rank == 1)
        self->quit(caf::make_error(caf::sec::runtime_error, "fake gave up"));
    };
    const auto r = run_with_fakes(test::small_job(2, 3), script);
    CHECK(r.status == run_status::failed);
    CHECK(r.error.find("worker 1 failed") != std::string::npos);
    CHECK(r.error.find("fake gave up") != std::string::npos);
  }
}
