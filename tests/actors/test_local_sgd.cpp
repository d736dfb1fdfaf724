// Local SGD through the actors: period 1 is sync, longer periods learn and end on one model,
// DiLoCo's outer step and streaming fragments (overlapped too) end exactly where engines
// stepped by hand end, the packed weights (and async's packed gradients) learn what float32
// does, AdamW's state stays with each replica, and a failure is reported as under sync.
#include "core/collective/sum_in_order.hpp"
#include "core/optim/outer_optimizer.hpp"
#include "core/run/run_plan.hpp"
#include "core/run/thread_team.hpp"
#include "core/train/replica_engine.hpp"
#include "training_fixtures.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

#include <optional>
#include <string>

using namespace troupe;

TEST_SUITE("local_sgd") {
  TEST_CASE("local_sgd with period 1 is sync training (SGD with momentum, even and uneven)") {
    for (int64_t replicas : {2, 3}) {
      CAPTURE(replicas);
      auto sync = test::small_job(replicas, 40);
      auto local = sync;
      local.parallelism.policy = policy_kind::local_sgd;
      local.parallelism.period = 1;
      auto data = test::small_data(sync);
      auto a = plan_and_run(sync, data, {});
      auto b = plan_and_run(local, data, {});
      REQUIRE(a.succeeded());
      REQUIRE(b.succeeded());
      CHECK(b.steps == 40);
      CHECK(test::max_abs_diff(a.final_weights, b.final_weights) <= 1e-6);
    }
  }

  TEST_CASE("local_sgd with a longer period learns, ends on one model, reports every step") {
    for (bool momenta : {false, true}) {
      CAPTURE(momenta);
      auto job = test::small_job(2, 60);
      job.parallelism.policy = policy_kind::local_sgd;
      job.parallelism.period = 7;  // averaging also at evaluations (every 10) and the end
      job.parallelism.average_momenta = momenta;
      int steps_seen = 0;
      run_options options;
      options.on_progress = [&](const progress_update& p) { steps_seen += !p.evaluation; };
      auto r = plan_and_run(job, test::small_data(job), options);
      REQUIRE(r.succeeded());
      CHECK(r.steps == 60);
      CHECK(steps_seen == 60);
      CHECK(*r.test_accuracy > 0.9);
      CHECK(r.workers[1].steps == 60);
      // A longer period must differ from sync: replicas really stepped alone in between.
      auto sync = job;
      sync.parallelism.policy = policy_kind::sync;
      auto s = plan_and_run(sync, test::small_data(job), {});
      CHECK(test::max_abs_diff(r.final_weights, s.final_weights) > 1e-4);
    }
  }

  // Streaming fragments (parallelism.fragments), with and without DiLoCo's outer step: the run
  // ends exactly where two engines end that step alone and average, by hand, each fragment at
  // the steps the schedule names (and the whole model at evaluations and the last step). With
  // fragment_overlap the engines hand in a copy, go on, and merge the average `overlap` steps
  // later (or before the next average), mixing it into their own values.
  TEST_CASE("streaming fragments average each fragment at its own steps, as done by hand") {
    struct variant {
      bool outer;
      int64_t overlap;
      double mix;
    };
    for (const auto [outer, overlap, mix] : {variant{false, 0, 1.0}, variant{true, 0, 1.0},
                                             variant{false, 1, 0.5}, variant{true, 2, 0.75}}) {
      CAPTURE(outer);
      CAPTURE(overlap);
      auto job = test::small_job(2, 24);  // evaluations after steps 9, 19 and 23
      job.parallelism.policy = policy_kind::local_sgd;
      job.parallelism.period = 4;
      job.parallelism.fragments = 2;
      job.parallelism.outer_optimizer = {outer, 0.7, 0.5, true};
      job.parallelism.fragment_overlap = overlap;
      if (overlap > 0)
        job.parallelism.fragment_mix = mix;
      const auto data = test::small_data(job);
      const auto run = plan_and_run(job, data, {});
      REQUIRE_MESSAGE(run.succeeded(), run.error);
      CHECK(run.steps == 24);

      const auto plan = make_run_plan(job, describe_data(job.data));
      use_plan_threads(plan);  // the workers' OpenBLAS threads (core/run/thread_team.hpp)
      const auto start = initial_weights(settings_of(job), data->classes);
      const auto fragments = fragments_of(plan);
      REQUIRE(fragments.size() == 2);
      replica_engine a(replica_plan_of(plan, 0), data, start);
      replica_engine b(replica_plan_of(plan, 1), data, start);
      outer_optimizer outer_step(job.parallelism.outer_optimizer);
      outer_step.set_base(start.reshape({-1}));
      std::vector<int64_t> fragment_steps;
      struct on_its_way {
        int64_t merge_before;
        int64_t begin;
        at::Tensor average;
      };
      std::optional<on_its_way> in_flight;
      for (int64_t step = 0; step < 24; ++step) {
        if (in_flight && step == in_flight->merge_before) {
          for (auto* e : {&a, &b})
            e->set_weights_part(in_flight->average, in_flight->begin, mix);
          in_flight.reset();
        }
        for (auto* e : {&a, &b}) {
          e->compute_gradient(step, false);
          e->apply(e->gradient(), plan.lr_at(step));
        }
        if (!plan.schedule.averages_after(step))
          continue;
        const auto f = plan.schedule.fragment_after(step);
        if (f >= 0) {
          fragment_steps.push_back(step);
          const auto& part = fragments[static_cast<std::size_t>(f)];
          auto average = weighted_sum_in_order({a.weights().narrow(0, part.begin, part.size),
                                                b.weights().narrow(0, part.begin, part.size)},
                                               {0.5, 0.5});
          if (outer)
            average = outer_step.step_part(average, part.begin);
          if (overlap > 0) {
            in_flight = on_its_way{plan.schedule.merge_before(step), part.begin, average};
            continue;
          }
          a.set_weights_part(average, part.begin);
          b.set_weights_part(average, part.begin);
        } else {
          auto average = weighted_sum_in_order({a.weights(), b.weights()}, {0.5, 0.5});
          if (outer) {
            average = outer_step.step(average);
            outer_step.set_base(average);
          }
          a.set_weights(average);
          b.set_weights(average);
        }
      }
      CHECK(fragment_steps == std::vector<int64_t>{1, 3, 5, 7, 11, 13, 15, 17, 21});
      CHECK(!in_flight);  // merged before the last step's average
      CHECK(at::equal(run.final_weights, a.weights()));
      CHECK(at::equal(a.weights(), b.weights()));
      if (overlap > 0) {  // the overlap changed the training: the merges were really late
        auto waiting = job;
        waiting.parallelism.fragment_overlap = 0;
        waiting.parallelism.fragment_mix.reset();
        const auto waited = plan_and_run(waiting, data, {});
        REQUIRE(waited.succeeded());
        CHECK(!at::equal(waited.final_weights, run.final_weights));
      }
    }
  }

  TEST_CASE("compression: local_sgd and async in int8 and bf16 learn what float32 does, closely") {
    // local_sgd: the replicas end on one model (the run's weights are replica 0's; every one
    // adds the same packed average to the same base), near the float32 run's, yet not equal:
    // the differences really were rounded. Also with streaming fragments (each packed against
    // the last average there, whole until the first evaluation's average gives both sides a
    // base), with DiLoCo's outer step and the overlap.
    struct variant {
      int64_t period;
      int64_t fragments;
      int64_t overlap;
      bool outer;
    };
    auto job = test::small_job(2, 60);
    job.parallelism.policy = policy_kind::local_sgd;
    auto data = test::small_data(job);
    // `job` packed in int8 and in bf16: `steps` completed, `learned` of its accuracy, weights
    // near `exact`'s but not equal to them.
    const auto packed_runs_close = [&](const job_config& unpacked, const run_report& exact,
                                       int64_t steps, const auto& learned) {
      for (auto kind : {compression_kind::int8, compression_kind::bf16}) {
        CAPTURE(std::string(to_string(kind)));
        auto packed_job = unpacked;
        packed_job.parallelism.compression = kind;
        const auto packed = plan_and_run(packed_job, data, {});
        REQUIRE_MESSAGE(packed.succeeded(), packed.error);
        CHECK(packed.steps == steps);
        CHECK(learned(*packed.test_accuracy));
        const double diff = test::max_abs_diff(exact.final_weights, packed.final_weights);
        CHECK(diff > 0);
        CHECK(diff < 5e-2);
      }
    };
    for (const auto [period, fragments, overlap, outer] :
         {variant{7, 1, 0, false}, variant{4, 2, 0, false}, variant{4, 2, 2, true}}) {
      CAPTURE(fragments);
      CAPTURE(overlap);
      job.parallelism.period = period;
      job.parallelism.fragments = fragments;
      job.parallelism.fragment_overlap = overlap;
      job.parallelism.outer_optimizer = {outer, 0.7, 0.5, true};
      const auto plain = plan_and_run(job, data, {});
      REQUIRE(plain.succeeded());
      packed_runs_close(job, plain, 60, [](double accuracy) { return accuracy > 0.9; });
    }
    // async, one replica, max_staleness 0: plain training but for the packing.
    auto async = test::small_job(1, 40);
    async.parallelism.policy = policy_kind::async;
    async.parallelism.max_staleness = 0;
    const auto exact = plan_and_run(async, data, {});
    REQUIRE(exact.succeeded());
    packed_runs_close(async, exact, 40,
                      [&](double accuracy) { return accuracy >= *exact.test_accuracy - 0.02; });
  }

  TEST_CASE("adamw under local_sgd and async: one replica of either equals one sync replica") {
    // With one replica, averaging and the parameter server change nothing: what differs is only
    // where the optimizer steps (the replica, the server). With two, averaging AdamW's weights
    // is not stepping on the averaged gradient (the step is not linear): those only train.
    auto sync = test::small_job(1, 30);
    sync.optimizer.kind = optimizer_kind::adamw;
    sync.optimizer.lr = 0.001;
    sync.optimizer.momentum = 0;
    sync.optimizer.weight_decay = 0.05;
    auto data = test::small_data(sync);
    const auto reference = plan_and_run(sync, data, {});
    REQUIRE(reference.succeeded());
    for (auto policy : {policy_kind::local_sgd, policy_kind::async}) {
      CAPTURE(to_string(policy));
      auto job = sync;
      job.parallelism.policy = policy;
      if (policy == policy_kind::local_sgd)
        job.parallelism.period = 3;
      else
        job.parallelism.max_staleness = 0;
      const auto one = plan_and_run(job, data, {});
      REQUIRE_MESSAGE(one.succeeded(), one.error);
      CHECK(test::max_abs_diff(one.final_weights, reference.final_weights) <= 1e-5);
      job.parallelism.replicas = 2;
      const auto two = plan_and_run(job, data, {});
      REQUIRE_MESSAGE(two.succeeded(), two.error);
      CHECK(*two.test_accuracy >= *reference.test_accuracy - 0.1);
    }
  }

  TEST_CASE("a failure under local_sgd is reported like under sync") {
    auto job = test::small_job(2, 50);
    job.parallelism.policy = policy_kind::local_sgd;
    job.faults.throw_worker = 0;
    job.faults.throw_step = 12;
    auto r = plan_and_run(job, test::small_data(job), {});
    CHECK(r.status == run_status::failed);
    CHECK(r.error.find("worker 0 failed") != std::string::npos);
  }
}
