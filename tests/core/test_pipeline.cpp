// Pipeline schedules (pure functions) and stage splits: the properties every schedule must
// keep, checked for a range of stage and micro-batch counts rather than for one example.
#include "core/errors.hpp"
#include "core/pipeline/pipeline_schedule.hpp"
#include "core/pipeline/stage_split.hpp"
#include "core/run/run_plan.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>

using namespace troupe;

namespace {

const pipeline_schedule_kind kinds[] = {pipeline_schedule_kind::gpipe,
                                        pipeline_schedule_kind::one_f_one_b};

// Fashion-MNIST's facts, as the plan sees them before loading.
const data_facts fashion = describe_data(data_config{});

// Position of (kind, micro) in a stage's list.
std::size_t index_of(const std::vector<pipeline_op>& ops, pipeline_op::kind what, int64_t m) {
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].what == what && ops[i].micro == m)
      return i;
  return ops.size();
}

std::vector<layer_summary> mlp_layers() {
  return {{"flatten", "Flatten", 0}, {"fc1", "Linear", 200960}, {"act1", "ReLU", 0},
          {"fc2", "Linear", 32896},  {"act2", "ReLU", 0},       {"out", "Linear", 1290}};
}

std::string first_problem(const std::function<void()>& f) {
  try {
    f();
  } catch (const job_error& e) {
    return e.problems().front();
  }
  return "";
}

}  // namespace

TEST_SUITE("pipeline") {
  TEST_CASE("every stage runs each micro-batch forward once, then backward once") {
    for (auto kind : kinds)
      for (int64_t p = 1; p <= 5; ++p)
        for (int64_t m = 1; m <= 9; ++m) {
          CAPTURE(to_string(kind));
          CAPTURE(p);
          CAPTURE(m);
          const auto schedule = make_pipeline_schedule(p, m, kind);
          REQUIRE(schedule.size() == static_cast<std::size_t>(p));
          for (const auto& ops : schedule) {
            REQUIRE(ops.size() == static_cast<std::size_t>(2 * m));
            for (int64_t i = 0; i < m; ++i) {
              const auto f = index_of(ops, pipeline_op::kind::forward, i);
              const auto b = index_of(ops, pipeline_op::kind::backward, i);
              CHECK(f < ops.size());
              CHECK(b < ops.size());
              CHECK(f < b);
            }
          }
        }
  }

  TEST_CASE("cross-stage dependencies hold and idle time matches (P-1)/(M+P-1)") {
    for (auto kind : kinds)
      for (int64_t p = 1; p <= 5; ++p)
        for (int64_t m = 1; m <= 9; ++m) {
          CAPTURE(to_string(kind));
          CAPTURE(p);
          CAPTURE(m);
          const auto schedule = make_pipeline_schedule(p, m, kind);
          // Unit forward and backward: M+P-1 slots each way, 2(P-1) idle slots per stage.
          const auto t = simulate_pipeline(schedule, m, 1.0, 1.0);
          CHECK(t.makespan == doctest::Approx(2.0 * static_cast<double>(m + p - 1)));
          for (double idle : t.idle)
            CHECK(idle == doctest::Approx(2.0 * static_cast<double>(p - 1)));
          CHECK(t.bubble_fraction() == doctest::Approx(predicted_bubble_fraction(p, m)));
          // A forward starts after the previous stage's forward of the same micro-batch ended,
          // a backward after the next stage's backward.
          for (std::size_t s = 1; s < schedule.size(); ++s)
            for (int64_t i = 0; i < m; ++i) {
              const auto f = index_of(schedule[s], pipeline_op::kind::forward, i);
              const auto f_prev = index_of(schedule[s - 1], pipeline_op::kind::forward, i);
              CHECK(t.start[s][f] >= t.start[s - 1][f_prev] + 1.0);
              const auto b = index_of(schedule[s - 1], pipeline_op::kind::backward, i);
              const auto b_next = index_of(schedule[s], pipeline_op::kind::backward, i);
              CHECK(t.start[s - 1][b] >= t.start[s][b_next] + 1.0);
            }
          // Backward twice as slow as forward (as on a CPU) keeps the same bubble fraction.
          const auto slow_b = simulate_pipeline(schedule, m, 1.0, 2.0);
          CHECK(slow_b.bubble_fraction() == doctest::Approx(predicted_bubble_fraction(p, m)));
        }
  }

  TEST_CASE("1f1b holds at most P-s activations on stage s; gpipe holds all M") {
    for (int64_t p = 1; p <= 6; ++p)
      for (int64_t m = 1; m <= 10; ++m) {
        CAPTURE(p);
        CAPTURE(m);
        const auto one =
            simulate_pipeline(make_pipeline_schedule(p, m, pipeline_schedule_kind::one_f_one_b), m);
        const auto all =
            simulate_pipeline(make_pipeline_schedule(p, m, pipeline_schedule_kind::gpipe), m);
        for (int64_t s = 0; s < p; ++s) {
          CHECK(one.peak_live[static_cast<std::size_t>(s)] == std::min(p - s, m));
          CHECK(all.peak_live[static_cast<std::size_t>(s)] == m);
        }
      }
  }

  TEST_CASE("the simulator refuses malformed and deadlocking schedules") {
    using op = pipeline_op;
    CHECK_THROWS_AS(simulate_pipeline({{{op::kind::backward, 0}, {op::kind::forward, 0}}}, 1),
                    std::invalid_argument);
    CHECK_THROWS_AS(simulate_pipeline({{{op::kind::forward, 0}}}, 1), std::invalid_argument);
    // Stage 0 waits for backward 1 before it sends forward 1, which stage 1 needs first.
    const std::vector<std::vector<op>> deadlock{{{op::kind::forward, 0},
                                                 {op::kind::backward, 1},
                                                 {op::kind::forward, 1},
                                                 {op::kind::backward, 0}},
                                                {{op::kind::forward, 1},
                                                 {op::kind::backward, 1},
                                                 {op::kind::forward, 0},
                                                 {op::kind::backward, 0}}};
    CHECK_THROWS_AS(simulate_pipeline(deadlock, 2), std::invalid_argument);
    CHECK_THROWS_AS(make_pipeline_schedule(0, 1, pipeline_schedule_kind::gpipe),
                    std::invalid_argument);
    CHECK_THROWS_AS(make_pipeline_schedule(2, 0, pipeline_schedule_kind::gpipe),
                    std::invalid_argument);
  }

  TEST_CASE("balanced split: boundaries before layers with parameters, largest stage minimal") {
    const auto layers = mlp_layers();
    auto two = split_stages(layers, 2, {});
    REQUIRE(two.size() == 2);
    CHECK(two[0].begin == 0);
    CHECK(two[0].end == 3);  // flatten, fc1, act1
    CHECK(two[1].end == 6);
    CHECK(two[0].parameters == 200960);
    CHECK(two[1].parameters == 32896 + 1290);
    auto three = split_stages(layers, 3, {});
    REQUIRE(three.size() == 3);
    CHECK(three[1].begin == 3);
    CHECK(three[2].begin == 5);  // act2 stays with fc2: boundaries are at fc2 and out
    CHECK(layers[static_cast<std::size_t>(three[2].begin)].name == "out");
    // Every layer belongs to exactly one stage, in order.
    for (std::size_t s = 1; s < three.size(); ++s)
      CHECK(three[s].begin == three[s - 1].end);
    // Equal layers split evenly.
    std::vector<layer_summary> equal{
        {"a", "Linear", 10}, {"b", "Linear", 10}, {"c", "Linear", 10}, {"d", "Linear", 10}};
    auto halves = split_stages(equal, 2, {});
    CHECK(halves[0].parameters == 20);
    CHECK(halves[1].parameters == 20);
  }

  TEST_CASE("explicit split, and the splits that cannot work") {
    const auto layers = mlp_layers();
    auto given = split_stages(layers, 2, {"out"});
    CHECK(given[0].end == 5);
    CHECK(given[1].parameters == 1290);
    CHECK(first_problem([&] { split_stages(layers, 4, {}); })
              .find("/parallelism/stages: 4 stages, but the model has only 3 layers with "
                    "parameters") == 0);
    CHECK(first_problem([&] {
            split_stages(layers, 2, {"fc9"});
          }).find("/parallelism/split/0: no layer \"fc9\"") == 0);
    CHECK(first_problem([&] {
            split_stages(layers, 2, {"act1"});
          }).find("/parallelism/split/0: a stage must begin at a layer with parameters") == 0);
    CHECK(first_problem([&] {
            split_stages(layers, 2, {"fc1"});
          }).find("/parallelism/split/0: a stage must begin") == 0);
    CHECK(first_problem([&] {
            split_stages(layers, 3, {"out", "fc2"});
          }).find("/parallelism/split/1: \"fc2\" does not come after") == 0);
  }
  TEST_CASE("the plan states the split, the micro-batches and the predicted bubble") {
    job_config job;
    job.training.batch_size = 30;
    job.parallelism.replicas = 1;
    job.parallelism.stages = 2;
    job.parallelism.micro_batches = 4;
    const auto plan = make_run_plan(job, fashion);
    REQUIRE(plan.stages.size() == 2);
    CHECK(plan.micro_batch_rows == std::vector<int64_t>{8, 8, 7, 7});
    CHECK(plan.predicted_bubble == doctest::Approx(0.2));
    CHECK(plan.boundary_floats_per_row == std::vector<int64_t>{256});  // after act1
    const auto text = render_plan(plan);
    CHECK(text.find("stage 0: flatten..act1 (3 layers), 200960 parameters") != std::string::npos);
    CHECK(text.find("stage 1: fc2..out (3 layers), 34186 parameters") != std::string::npos);
    CHECK(text.find("predicted bubble 20%") != std::string::npos);
    CHECK(text.find("balanced by parameter count") != std::string::npos);

    job.parallelism.stages = 4;
    CHECK(first_problem([&] { make_run_plan(job, fashion); }).find("/parallelism/stages") == 0);
    job.parallelism.stages = 2;
    job.parallelism.split = {"pool1"};
    CHECK(first_problem([&] {
            make_run_plan(job, fashion);
          }).find("/parallelism/split/0: no layer \"pool1\"") == 0);
  }
}
