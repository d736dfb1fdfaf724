// Early stopping and keep_best through every mode: the run stops after `patience` evaluations
// without an improvement, its final weights are exactly those after the step it stopped at (a
// run of that many steps ends with the same), and best_weights.pt holds exactly the weights of
// the best evaluation. The validation set is what evaluations use; the test set waits for the end.
#include "training_fixtures.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

using namespace troupe;

namespace {

// 400 training rows, 100 held out; evaluations every 5 steps.
job_config watched(job_config job) {
  job.data.train_samples = 500;
  job.data.validation = 100;
  job.training.eval_interval = 5;
  job.training.steps = 200;
  return job;
}

// With min_delta 10 no evaluation after the first counts as an improvement: the run stops after
// the evaluation `patience` evaluations later, at step 5 * (patience + 1) - 1.
job_config stopping(job_config job, int64_t patience) {
  early_stopping_config e;
  e.patience = patience;
  e.min_delta = 10;
  job.training.early_stopping = e;
  return job;
}

// The same job, run plainly for `steps` steps (evaluating as often: local SGD averages at every
// evaluation).
run_report plain_run(job_config job, int64_t steps) {
  job.training.early_stopping.reset();
  job.training.keep_best.reset();
  job.training.steps = steps;
  return plan_and_run(job, test::small_data(job));
}

}  // namespace

TEST_SUITE("essentials") {
  TEST_CASE("early stopping ends every deterministic mode exactly where a shorter run ends") {
    struct mode {
      const char* name;
      int64_t replicas, stages, micro_batches;
      policy_kind policy;
    };
    for (auto m : {mode{"sync, 2 replicas", 2, 1, 1, policy_kind::sync},
                   mode{"sync, 1 replica", 1, 1, 1, policy_kind::sync},
                   mode{"local_sgd", 2, 1, 1, policy_kind::local_sgd},
                   mode{"pipeline 2x2", 2, 2, 2, policy_kind::sync}}) {
      CAPTURE(m.name);
      auto job = stopping(watched(test::small_job(m.replicas, 200)), 2);
      job.parallelism.stages = m.stages;
      job.parallelism.micro_batches = m.micro_batches;
      job.parallelism.policy = m.policy;
      const auto r = plan_and_run(job, test::small_data(job));
      REQUIRE_MESSAGE(r.succeeded(), r.error);
      REQUIRE(r.stopped_early_at.has_value());
      CHECK(*r.stopped_early_at == 14);
      CHECK(r.validation_accuracy.has_value());
      CHECK(r.test_accuracy.has_value());  // the one evaluation of the test set, at the end
      const auto reference = plain_run(job, 15);
      REQUIRE(reference.succeeded());
      CHECK(at::equal(r.final_weights, reference.final_weights));
    }
  }

  TEST_CASE("keep_best keeps exactly the weights of the best evaluation") {
    for (auto policy : {policy_kind::sync, policy_kind::local_sgd}) {
      CAPTURE(to_string(policy));
      auto job = watched(test::small_job(2, 200));
      job.parallelism.policy = policy;
      job.optimizer.lr = 0.5;  // noisy enough that the last evaluation is not always the best
      job.training.steps = 60;
      job.training.keep_best = monitor_metric::validation_accuracy;
      const auto r = plan_and_run(job, test::small_data(job));
      REQUIRE_MESSAGE(r.succeeded(), r.error);
      REQUIRE(r.best_step.has_value());
      CHECK(r.best_metric == "validation_accuracy");
      CHECK((*r.best_step + 1) % 5 == 0);
      REQUIRE(r.best_weights.defined());
      const auto reference = plain_run(job, *r.best_step + 1);
      CHECK(at::equal(r.best_weights, reference.final_weights));
      CHECK(!r.stopped_early_at.has_value());
    }
  }

  // One stage with micro-batches evaluates alone and hands in its final weights before the
  // weights it evaluated: the last evaluation, the best here, must still be kept, with its figure.
  TEST_CASE("keep_best keeps the last evaluation's weights in every stage layout") {
    struct layout {
      int64_t replicas, stages, micro_batches;
    };
    for (auto l : {layout{1, 1, 2}, layout{1, 2, 2}, layout{2, 1, 2}, layout{1, 1, 1}}) {
      CAPTURE(l.replicas);
      CAPTURE(l.stages);
      CAPTURE(l.micro_batches);
      auto job = watched(test::small_job(l.replicas, 200));
      job.parallelism.stages = l.stages;
      job.parallelism.micro_batches = l.micro_batches;
      job.optimizer.lr = 0.01;  // small: every evaluation improves on the one before
      job.training.steps = 20;
      job.training.keep_best = monitor_metric::validation_loss;
      const auto r = plan_and_run(job, test::small_data(job));
      REQUIRE_MESSAGE(r.succeeded(), r.error);
      REQUIRE(r.best_step.has_value());
      CHECK(*r.best_step == 19);
      REQUIRE(r.best_value.has_value());
      REQUIRE(r.validation_loss.has_value());
      CHECK(*r.best_value == *r.validation_loss);  // the figure of the evaluation kept
      REQUIRE(r.best_weights.defined());
      CHECK(at::equal(r.best_weights, r.final_weights));
    }
  }

  TEST_CASE("async stops early and keeps its best at the parameter server") {
    auto job = stopping(watched(test::small_job(2, 200)), 3);
    job.parallelism.policy = policy_kind::async;
    job.parallelism.max_staleness = 1;
    job.optimizer.lr = 0.01;
    job.training.keep_best = monitor_metric::validation_loss;
    const auto r = plan_and_run(job, test::small_data(job));
    REQUIRE_MESSAGE(r.succeeded(), r.error);
    REQUIRE(r.stopped_early_at.has_value());
    CHECK(*r.stopped_early_at == 19);
    REQUIRE(r.best_weights.defined());
    CHECK(r.final_weights.defined());
  }

  TEST_CASE("a stacked ensemble stops on its averaged prediction's validation figure") {
    auto job = stopping(watched(test::small_job(1, 200)), 1);
    job.ensemble.members = 3;
    const auto r = plan_and_run(job, test::small_data(job));
    REQUIRE_MESSAGE(r.succeeded(), r.error);
    REQUIRE(r.stopped_early_at.has_value());
    CHECK(*r.stopped_early_at == 9);
    CHECK(r.steps == 10);
    REQUIRE(r.members.size() == 3);
    for (const auto& m : r.members) {
      CHECK(m.validation_accuracy.has_value());
      CHECK(m.test_accuracy.has_value());
    }
  }
}
