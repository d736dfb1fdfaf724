// The run driver's protocol stepped one message at a time under CAF's deterministic test
// coordinator (caf/scheduler/test_coordinator.hpp): every actor of the run (the driver, fake
// replicas, a client awaiting the report) runs on the test thread, and the test picks which
// one handles its next message. Replaying many interleavings, seeded, checks what the real
// scheduler's timing could only sample: the combined gradient is the same bits whatever order
// the replicas' gradients arrive in, and a stop request ends the run at a step boundary, every
// replica having applied exactly the steps the report counts.
#include "actors/cluster/system_config.hpp"
#include "actors/driver/run_driver.hpp"
#include "core/policy/step_pace.hpp"
#include "training_fixtures.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace troupe;

namespace {

// What the fakes saw, in the order the test thread ran them.
struct run_log {
  std::vector<int64_t> gradient_ranks;           ///< who sent a gradient, in sending order
  std::vector<std::vector<at::Tensor>> updates;  ///< by rank: each combined gradient received
  int64_t stop_after_step = -1;  ///< rank 0 raises the stop flag when it sends this step's
  std::atomic<bool> stop{false};
};

// Values whose float32 sum depends on the order they are added in: (1e8 + 1) - 1e8 is 0 but
// (1e8 - 1e8) + 1 is 1. Each step shifts them so that no two steps' gradients are equal.
at::Tensor gradient_of(int64_t rank, int64_t step, int64_t parameters) {
  const float values[] = {1e8f, 1.0f, -1e8f};
  return at::full({parameters}, values[rank % 3] + static_cast<float>(step % 7));
}

// A replica that follows the protocol: runs each released step (sending its gradient to the
// driver), applies the update that comes back, reports, evaluates when told, and hands in its
// final weights after the last step.
caf::behavior logging_replica(caf::event_based_actor* self, run_driver_actor driver, int64_t rank,
                              int64_t parameters, std::shared_ptr<run_log> log) {
  auto pace = std::make_shared<step_pace>();
  auto advance = [=] {
    if (!pace->may_start())
      return;
    const auto step = pace->begin();
    log->gradient_ranks.push_back(rank);
    if (rank == 0 && step == log->stop_after_step)
      log->stop = true;
    self->send(driver, gradient_atom_v, gradient_meta{rank, step, 1.0, 16},
               gradient_of(rank, step, parameters));
  };
  return {
      [=](compute_atom, int64_t step) {
        pace->release(step);
        advance();
      },
      [](probe_atom) {},
      [=](update_atom, const update_meta& meta, const at::Tensor& combined) {
        log->updates[static_cast<std::size_t>(rank)].push_back(combined.clone());
        self->send(driver, step_stats{rank, meta.step, 1.0, 16, 0.0, 0.0, 0.0});
        if (meta.evaluate)
          self->send(driver, eval_report{rank, meta.step, 1.0, 1, 2, 0.0});
        pace->finish(meta.step);
        if (meta.last)
          self->send(driver, weights_atom_v, rank, at::zeros({4}));
        else
          advance();
      },
  };
}

// Runs `job` (3 replicas, sync, gradients meeting at the driver) on the test coordinator. With
// `seed` 0 the jobs run in the order they became ready; otherwise each next job is drawn at
// random among the ready ones, one message at a time.
run_report run_stepped(const job_config& job, uint64_t seed, const std::shared_ptr<run_log>& log) {
  auto data = test::small_data(job);
  auto plan = make_run_plan(job, facts_of(*data));
  plan.gradients = gradient_meeting::driver;
  const auto parameters = plan.model.parameters;
  log->updates.assign(static_cast<std::size_t>(job.parallelism.replicas), {});
  driver_options options;
  options.context = make_worker_context(std::move(plan), std::move(data));
  options.run.stop_requested = &log->stop;
  options.spawn_local = [parameters, log](caf::actor_system& system, int64_t rank,
                                          run_driver_actor driver) {
    return system.spawn(logging_replica, std::move(driver), rank, parameters, log);
  };
  caf::actor_system_config cfg;
  configure_system(cfg);
  cfg.set("scheduler.policy", caf::atom("testing"));
  cfg.set("scheduler.max-throughput", size_t{1});  // one message per turn
  caf::actor_system system{cfg};
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(system.scheduler());
  auto report = std::make_shared<run_report>();
  auto answered = std::make_shared<bool>(false);
  auto driver = spawn_run_driver(system, std::move(options));
  // The client takes its state as spawn arguments: CAF 0.17's spawn of a function with none
  // dereferences a null tuple pointer (UBSan reports it in caf/detail/init_fun_factory.hpp).
  system.spawn(
      [](caf::event_based_actor* client, run_driver_actor driver,
         std::shared_ptr<run_report> report, std::shared_ptr<bool> answered) {
        client->request(driver, caf::infinite, run_atom_v).then([report, answered](run_report& r) {
          *report = std::move(r);
          *answered = true;
        });
      },
      driver, report, answered);
  std::mt19937_64 draw(seed);
  while (sched.has_job()) {
    if (seed != 0) {
      const auto pick = std::uniform_int_distribution<std::size_t>(0, sched.jobs.size() - 1)(draw);
      std::rotate(sched.jobs.begin(), sched.jobs.begin() + static_cast<std::ptrdiff_t>(pick),
                  sched.jobs.begin() + static_cast<std::ptrdiff_t>(pick) + 1);
    }
    sched.run_once();
  }
  REQUIRE_MESSAGE(*answered, "the driver never answered");
  return *report;
}

bool same_bits(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!at::equal(a[i], b[i]))
      return false;
  return true;
}

}  // namespace

TEST_SUITE("driver_steps") {
  TEST_CASE("the combined gradient has the same bits whatever order the gradients arrive in") {
    const auto job = test::small_job(3, 6);
    auto fifo = std::make_shared<run_log>();
    const auto first = run_stepped(job, 0, fifo);
    REQUIRE_MESSAGE(first.succeeded(), first.error);
    REQUIRE(fifo->updates[0].size() == 6);
    // The first step's sum in rank order: (1e8 + 1) - 1e8 = 0 in float32, over 3 replicas.
    CHECK(fifo->updates[0][0].max().item<float>() == 0.0f);
    bool another_order = false;
    for (uint64_t seed = 1; seed <= 30; ++seed) {
      CAPTURE(seed);
      auto shuffled = std::make_shared<run_log>();
      const auto r = run_stepped(job, seed, shuffled);
      REQUIRE_MESSAGE(r.succeeded(), r.error);
      another_order = another_order || shuffled->gradient_ranks != fifo->gradient_ranks;
      for (std::size_t rank = 0; rank < 3; ++rank)
        CHECK(same_bits(shuffled->updates[rank], fifo->updates[0]));
    }
    CHECK(another_order);  // the draws did reorder the arrivals
  }

  TEST_CASE("a stop request ends the run at a step boundary, in every interleaving") {
    auto job = test::small_job(3, 200);
    for (uint64_t seed = 0; seed <= 20; ++seed) {
      CAPTURE(seed);
      auto log = std::make_shared<run_log>();
      log->stop_after_step = 5;
      const auto r = run_stepped(job, seed, log);
      CHECK(r.status == run_status::failed);
      CHECK_MESSAGE(r.error.rfind("interrupted after", 0) == 0, r.error);
      // The stop was raised while step 5 was under way: the run ends after a step at or after
      // it, within the release window, and every replica applied exactly the steps reported.
      CHECK(r.steps >= 6);
      CHECK(r.steps <= 6 + release_window);
      for (std::size_t rank = 0; rank < 3; ++rank)
        CHECK(static_cast<int64_t>(log->updates[rank].size()) == r.steps);
    }
  }
}
