// Pipelines through the actors: every schedule, stage count, micro-batch count and the hybrid
// replicas x stages layout train exactly like one unpartitioned worker on the same global
// batch; stages report their bubble and live activations; a failing stage ends the run naming
// it, with no stage left waiting.
#include "training_fixtures.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

#include <atomic>

using namespace troupe;

namespace {

// 30 rows: micro-batches of 8, 8, 7, 7 (and 4, 4, 4, 3 per replica in the hybrid layout), so
// the uneven remainders are part of every comparison.
job_config base_job(model_kind kind) {
  auto job = test::small_job(1, 30);
  job.training.batch_size = 30;
  if (kind == model_kind::cnn) {
    job.model.kind = kind;
    job.model.channels = {4, 8};
    job.model.hidden = {16};
    job.model.kernel_size = 3;
  }
  return job;
}

job_config pipelined(job_config job, int64_t replicas, int64_t stages, int64_t micro_batches,
                     pipeline_schedule_kind schedule) {
  job.parallelism.replicas = replicas;
  job.parallelism.stages = stages;
  job.parallelism.micro_batches = micro_batches;
  job.parallelism.schedule = schedule;
  return job;
}

const pipeline_schedule_kind schedules[] = {pipeline_schedule_kind::gpipe,
                                            pipeline_schedule_kind::one_f_one_b};

}  // namespace

TEST_SUITE("pipeline_training") {
  TEST_CASE("pipelines equal unpartitioned training on the same global batch (30 steps)") {
    for (auto kind : {model_kind::mlp, model_kind::cnn}) {
      const auto job = base_job(kind);
      auto data = test::small_data(job);
      const auto reference = plan_and_run(job, data, {});
      REQUIRE(reference.succeeded());
      struct layout {
        int64_t replicas, stages, micro_batches;
      };
      for (auto schedule : schedules)
        for (auto l : {layout{1, 2, 1}, layout{1, 2, 4}, layout{1, 3, 1}, layout{1, 3, 4},
                       layout{2, 2, 4}, layout{1, 1, 4}}) {
          CAPTURE(to_string(kind));
          CAPTURE(to_string(schedule));
          CAPTURE(l.replicas);
          CAPTURE(l.stages);
          CAPTURE(l.micro_batches);
          const auto r = plan_and_run(
              pipelined(job, l.replicas, l.stages, l.micro_batches, schedule), data, {});
          REQUIRE(r.succeeded());
          CHECK(r.steps == 30);
          CHECK(r.replicas == l.replicas);
          CHECK(r.workers.size() == static_cast<std::size_t>(l.replicas * l.stages));
          REQUIRE(r.final_weights.sizes() == reference.final_weights.sizes());
          CHECK(test::max_abs_diff(r.final_weights, reference.final_weights) <= 1e-5);
          CHECK(*r.final_train_loss == doctest::Approx(*reference.final_train_loss).epsilon(1e-4));
          CHECK(*r.test_accuracy == doctest::Approx(*reference.test_accuracy));
        }
    }
  }

  TEST_CASE("an explicit split and adam or adamw train like one worker too") {
    for (auto optimizer : {optimizer_kind::adam, optimizer_kind::adamw}) {
      CAPTURE(to_string(optimizer));
      auto job = base_job(model_kind::mlp);
      job.optimizer.kind = optimizer;
      job.optimizer.lr = 0.001;
      job.optimizer.momentum = 0;
      job.optimizer.weight_decay = optimizer == optimizer_kind::adamw ? 0.05 : 0;
      auto data = test::small_data(job);
      const auto reference = plan_and_run(job, data, {});
      auto split = pipelined(job, 1, 2, 3, pipeline_schedule_kind::one_f_one_b);
      split.parallelism.split = {"out"};
      const auto r = plan_and_run(split, data, {});
      REQUIRE(r.succeeded());
      CHECK(test::max_abs_diff(r.final_weights, reference.final_weights) <= 1e-5);
    }
  }

  TEST_CASE("stages report busy and idle time and the schedule's live activations") {
    for (auto schedule : schedules) {
      CAPTURE(to_string(schedule));
      const auto job = pipelined(base_job(model_kind::mlp), 1, 3, 5, schedule);
      const auto r = plan_and_run(job, test::small_data(job), {});
      REQUIRE(r.succeeded());
      REQUIRE(r.workers.size() == 3);
      for (int64_t s = 0; s < 3; ++s) {
        const auto& w = r.workers[static_cast<std::size_t>(s)];
        CHECK(w.stage == s);
        CHECK(w.pipeline == 0);
        CHECK(w.steps == 30);
        CHECK(w.compute_s > 0);
        CHECK(w.idle_s > 0);  // every stage waits for the fill or the drain of its pipeline
        // 1F1B: at most P - s in flight on stage s; GPipe: all five micro-batches.
        CHECK(w.peak_live_activations ==
              (schedule == pipeline_schedule_kind::gpipe ? 5 : std::min<int64_t>(3 - s, 5)));
      }
      REQUIRE(r.bubble_fraction.has_value());
      CHECK(*r.bubble_fraction > 0);
      CHECK(*r.bubble_fraction < 1);
      CHECK(*r.predicted_bubble_fraction == doctest::Approx(2.0 / 7.0));
    }
  }

  TEST_CASE("a stage that throws ends the run, naming the stage; nothing waits") {
    struct fault {
      int64_t replicas, worker;
      const char* named;
    };
    for (auto f : {fault{1, 0, "stage 0 of replica 0"}, fault{1, 1, "stage 1 of replica 0"},
                   fault{1, 2, "stage 2 of replica 0"}, fault{2, 4, "stage 1 of replica 1"}}) {
      CAPTURE(f.named);
      auto job = pipelined(base_job(model_kind::mlp), f.replicas, 3, 4,
                           pipeline_schedule_kind::one_f_one_b);
      job.faults.throw_worker = f.worker;
      job.faults.throw_step = 4;
      const auto r = plan_and_run(job, test::small_data(job), {});
      CHECK(r.status == run_status::failed);
      CHECK(r.error.find(std::string(f.named) + " (worker " + std::to_string(f.worker) +
                         ") failed") != std::string::npos);
      CHECK(r.error.find("mat1 and mat2 shapes cannot be multiplied") != std::string::npos);
      CHECK(r.steps == 4);
      CHECK(!r.final_weights.defined());
    }
  }

  TEST_CASE("a diverging pipeline ends as diverged, with the step and micro-batch") {
    auto job = pipelined(base_job(model_kind::mlp), 1, 2, 2, pipeline_schedule_kind::gpipe);
    job.optimizer.lr = 1e12;
    job.optimizer.momentum = 0;
    const auto r = plan_and_run(job, test::small_data(job), {});
    CHECK(r.status == run_status::diverged);
    CHECK(r.error.find("stage 1 of replica 0") != std::string::npos);
    CHECK(r.error.find("loss is") != std::string::npos);
    CHECK(r.error.find("micro-batch") != std::string::npos);
  }

  TEST_CASE("a stop request ends a pipelined run after the step in progress") {
    auto job = pipelined(base_job(model_kind::mlp), 2, 2, 2, pipeline_schedule_kind::gpipe);
    job.training.steps = 1000;
    std::atomic<bool> stop{false};
    run_options options;
    options.stop_requested = &stop;
    options.on_progress = [&](const progress_update& p) {
      if (p.step >= 3)
        stop = true;
    };
    const auto r = plan_and_run(job, test::small_data(job), options);
    CHECK(r.status == run_status::failed);
    CHECK(r.error == "interrupted after 3 steps");
    CHECK(r.steps == 3);
  }
}
