// The small pieces a run is assembled from: step_rules, the report barrier and contribution
// round the strategies complete steps with, the final weights' assembly, the pipeline stages'
// idle windows, run statuses and metrics records, the loaded data checked against the plan, and
// the watch that ends a run whose steps stopped completing.
#include "core/data/data_source.hpp"
#include "core/errors.hpp"
#include "core/metrics/records.hpp"
#include "core/policy/contribution_round.hpp"
#include "core/policy/report_barrier.hpp"
#include "core/policy/step_rules.hpp"
#include "core/policy/step_watch.hpp"
#include "core/run/final_weights.hpp"
#include "core/train/stage_windows.hpp"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

using namespace troupe;

namespace {

void check_part(const step_part& p, int64_t worker, double loss, int64_t samples) {
  CHECK(p.worker == worker);
  CHECK(p.loss == loss);
  CHECK(p.samples == samples);
}

/// The steps in [0, total) after which `rules` evaluates, e.g. "3 7 9".
std::string evaluations(const step_rules& rules) {
  std::string out;
  for (int64_t s = 0; s < rules.total_steps(); ++s)
    if (rules.evaluates_after(s))
      out += (out.empty() ? "" : " ") + std::to_string(s);
  return out;
}

at::Tensor floats(std::vector<float> values) {
  return at::tensor(at::ArrayRef<float>(values), at::kFloat);
}

stage_timing timing(int64_t worker, int64_t step, double busy_s, int64_t first_ns,
                    int64_t last_ns) {
  stage_timing t;
  t.worker = worker;
  t.step = step;
  t.busy_s = busy_s;
  t.first_op_ns = first_ns;
  t.last_op_ns = last_ns;
  t.peak_live = worker + 1;
  return t;
}

dataset tiny_dataset(int64_t train_rows, int64_t test_rows, int64_t classes) {
  dataset d;
  d.description = "tiny";
  d.classes = classes;
  d.train.images = at::zeros({train_rows, 1, 28, 28}, at::kFloat);
  d.train.labels = at::zeros({train_rows}, at::kLong);
  d.test.images = at::zeros({test_rows, 1, 28, 28}, at::kFloat);
  d.test.labels = at::zeros({test_rows}, at::kLong);
  return d;
}

}  // namespace

TEST_SUITE("run_pieces") {
  // ---- step_rules ---------------------------------------------------------------------------

  TEST_CASE("step_rules: evaluates at every epoch's end, or every interval, and at the end") {
    const step_rules per_epoch(10, 4, 0);
    CHECK(per_epoch.total_steps() == 10);
    CHECK(per_epoch.steps_per_epoch() == 4);
    CHECK(evaluations(per_epoch) == "3 7 9");
    const step_rules every_3(10, 4, 3);  // the interval replaces the epochs' ends
    CHECK(evaluations(every_3) == "2 5 8 9");
    const step_rules every_5(10, 4, 5);  // the last step is an interval's end already
    CHECK(evaluations(every_5) == "4 9");
    const step_rules no_epochs(5, 0, 0);
    CHECK(evaluations(no_epochs) == "4");
  }

  TEST_CASE("step_rules: last step, epochs and outcomes") {
    const step_rules rules(10, 4, 0);
    CHECK(!rules.is_last(0));
    CHECK(!rules.is_last(8));
    CHECK(rules.is_last(9));
    CHECK(rules.is_last(10));
    CHECK(rules.epoch_of(0) == 0);
    CHECK(rules.epoch_of(3) == 0);
    CHECK(rules.epoch_of(4) == 1);
    CHECK(rules.epoch_of(7) == 1);
    CHECK(rules.epoch_of(9) == 2);
    CHECK(step_rules(5, 0, 0).epoch_of(4) == 0);

    const auto mid = rules.outcome_of(5);
    CHECK(mid.step == 5);
    CHECK(!mid.evaluate);
    CHECK(!mid.last);
    const auto epoch_end = rules.outcome_of(3);
    CHECK(epoch_end.step == 3);
    CHECK(epoch_end.evaluate);
    CHECK(!epoch_end.last);
    const auto last = rules.outcome_of(9);
    CHECK(last.step == 9);
    CHECK(last.evaluate);
    CHECK(last.last);
  }

  // ---- report_barrier -----------------------------------------------------------------------

  TEST_CASE("report_barrier: a step completes with every rank, parts in rank order") {
    report_barrier b(3);
    auto r = b.add({2, 0, 0.75, 10});
    CHECK(!r.complete);
    CHECK(r.violation.empty());
    r = b.add({0, 0, 0.25, 12});
    CHECK(!r.complete);
    r = b.add({1, 0, 0.5, 11});
    CHECK(r.violation.empty());
    REQUIRE(r.complete);
    REQUIRE(r.complete->size() == 3);
    check_part((*r.complete)[0], 0, 0.25, 12);
    check_part((*r.complete)[1], 1, 0.5, 11);
    check_part((*r.complete)[2], 2, 0.75, 10);
  }

  TEST_CASE("report_barrier: steps interleave across workers, each worker's in order") {
    report_barrier b(2);
    CHECK(!b.add({1, 0, 1.0, 1}).complete);
    CHECK(!b.add({1, 1, 2.0, 1}).complete);  // rank 1 runs ahead
    CHECK(!b.add({1, 2, 3.0, 1}).complete);
    const auto zero = b.add({0, 0, 5.0, 1});
    REQUIRE(zero.complete);
    check_part((*zero.complete)[0], 0, 5.0, 1);
    check_part((*zero.complete)[1], 1, 1.0, 1);
    const auto one = b.add({0, 1, 4.0, 1});
    REQUIRE(one.complete);
    check_part((*one.complete)[0], 0, 4.0, 1);
    check_part((*one.complete)[1], 1, 2.0, 1);
    // Workers report in order, so steps complete in order: a late report of step 0 is wrong.
    const auto late = b.add({1, 0, 1.0, 1});
    CHECK(!late.complete);
    CHECK(late.violation == "worker 1 reported step 0, which is complete");
  }

  TEST_CASE("report_barrier: a second report or an unknown rank is a violation") {
    report_barrier b(2);
    CHECK(!b.add({0, 3, 1.0, 1}).complete);
    auto r = b.add({0, 3, 9.0, 9});
    CHECK(!r.complete);
    CHECK(r.violation == "worker 0 reported step 3 twice");
    r = b.add({2, 3, 0, 0});
    CHECK(!r.complete);
    CHECK(r.violation == "worker 2 is unknown (there are 2)");
    r = b.add({-1, 3, 0, 0});
    CHECK(r.violation == "worker -1 is unknown (there are 2)");
    r = b.add({1, 3, 2.0, 2});
    REQUIRE(r.complete);
    check_part((*r.complete)[0], 0, 1.0, 1);  // the first report stands
  }

  // ---- contribution_round -------------------------------------------------------------------

  TEST_CASE("contribution_round: one tensor per rank, then the parts in rank order") {
    contribution_round round(3, "gradient");
    CHECK(!round.add(2, {2, 0, 0.75, 10}).complete);
    CHECK(!round.add(0, {0, 0, 0.25, 12}).complete);
    auto r = round.add(1, {1, 0, 0.5, 11});
    CHECK(r.violation.empty());
    REQUIRE(r.complete);
    REQUIRE(r.complete->size() == 3);
    check_part((*r.complete)[0], 0, 0.25, 12);
    check_part((*r.complete)[1], 1, 0.5, 11);
    check_part((*r.complete)[2], 2, 0.75, 10);
    // The next round starts empty.
    CHECK(!round.add(1, {1, 1, 1.0, 1}).complete);
    CHECK(!round.add(0, {0, 1, 2.0, 2}).complete);
    r = round.add(2, {2, 1, 3.0, 3});
    REQUIRE(r.complete);
    check_part((*r.complete)[0], 0, 2.0, 2);
    check_part((*r.complete)[1], 1, 1.0, 1);
    check_part((*r.complete)[2], 2, 3.0, 3);
  }

  TEST_CASE("contribution_round: a second tensor or an unknown slot is a violation") {
    contribution_round round(2, "weights");
    CHECK(!round.add(1, {1, 4, 1.0, 1}).complete);
    auto r = round.add(1, {1, 4, 7.0, 7});
    CHECK(!r.complete);
    CHECK(r.violation == "worker 1 sent its weights for step 4 twice");
    r = round.add(2, {2, 4, 0, 0});
    CHECK(!r.complete);
    CHECK(r.violation == "worker 2 is unknown");
    r = round.add(-3, {-3, 4, 0, 0});
    CHECK(r.violation == "worker -3 is unknown");
    // A pipeline's slot is its index; the message and the parts name the stage's own worker.
    r = round.add(0, {6, 4, 2.0, 2});
    REQUIRE(r.complete);
    check_part((*r.complete)[0], 6, 2.0, 2);
    check_part((*r.complete)[1], 1, 1.0, 1);  // the first tensor stands
  }

  // ---- assemble_final_weights ---------------------------------------------------------------

  TEST_CASE("final weights: equal replicas give rank 0's tensor") {
    const auto w = floats({1, 2, 3});
    const std::vector<at::Tensor> by_worker{w, w.clone(), w.clone()};
    const auto r = assemble_final_weights(by_worker, 3, 1);
    CHECK(r.error.empty());
    REQUIRE(r.flat.defined());
    CHECK(r.flat.is_same(by_worker[0]));
  }

  TEST_CASE("final weights: a differing replica is named") {
    const auto w = floats({1, 2, 3});
    auto r = assemble_final_weights({w, w.clone(), floats({1, 2, 4})}, 3, 1);
    CHECK(r.error == "replica 2 ended with weights different from replica 0");
    CHECK(!r.flat.defined());
    // The first that differs.
    r = assemble_final_weights({w, floats({0, 2, 3}), floats({1, 2, 4})}, 3, 1);
    CHECK(r.error == "replica 1 ended with weights different from replica 0");
    // A different shape, with as many or with other numbers of elements.
    r = assemble_final_weights({w, floats({1, 2, 3, 4})}, 2, 1);
    CHECK(r.error == "replica 1 ended with weights different from replica 0");
    r = assemble_final_weights({floats({1, 2, 3, 4}), floats({1, 2, 3, 4}).view({2, 2})}, 2, 1);
    CHECK(r.error == "replica 1 ended with weights different from replica 0");
    CHECK(!r.flat.defined());
  }

  TEST_CASE("final weights: pipelines concatenate pipeline 0's stages") {
    const auto s0 = floats({1, 2});
    const auto s1 = floats({3, 4, 5});
    auto r = assemble_final_weights({s0, s1, s0.clone(), s1.clone()}, 2, 2);
    CHECK(r.error.empty());
    REQUIRE(r.flat.defined());
    CHECK(at::equal(r.flat, floats({1, 2, 3, 4, 5})));

    r = assemble_final_weights({s0, s1, s0.clone(), floats({3, 4, 6})}, 2, 2);
    CHECK(r.error == "stage 1 of replica 1 ended with weights different from replica 0");
    CHECK(!r.flat.defined());
    r = assemble_final_weights({s0, s1, floats({1, 2, 0}), s1.clone()}, 2, 2);
    CHECK(r.error == "stage 0 of replica 1 ended with weights different from replica 0");
    // One pipeline of two stages: nothing to compare, the stages concatenate.
    r = assemble_final_weights({s0, s1}, 1, 2);
    CHECK(r.error.empty());
    CHECK(at::equal(r.flat, floats({1, 2, 3, 4, 5})));
  }

  TEST_CASE("final weights: stages with buffers give every parameter, then every buffer") {
    // Stage 0: parameters {1, 2}, buffer {10}; stage 1: parameters {3}, buffers {20, 21}.
    const auto s0 = floats({1, 2, 10});
    const auto s1 = floats({3, 20, 21});
    const auto r = assemble_final_weights({s0, s1}, 1, 2, {2, 1});
    CHECK(r.error.empty());
    CHECK(at::equal(r.flat, floats({1, 2, 3, 10, 20, 21})));
    // A stage holding fewer values than its parameters is a bug, not a result.
    CHECK_THROWS_AS(assemble_final_weights({s0, s1}, 1, 2, {4, 1}), c10::Error);
    CHECK_THROWS_AS(assemble_final_weights({s0, s1}, 1, 2, {2}), c10::Error);
  }

  TEST_CASE("final weights: as many tensors as workers, or it throws") {
    const auto w = floats({1});
    CHECK_THROWS_AS(assemble_final_weights({w, w, w}, 2, 2), c10::Error);
  }

  // ---- stage_windows ------------------------------------------------------------------------

  TEST_CASE("stage_windows: idle is the pipeline's window less the stage's busy time") {
    stage_windows windows(2, 2);  // workers 0, 1: pipeline 0; 2, 3: pipeline 1
    // Pipeline 0's window: 1 s to 4 s (3 s); pipeline 1's: 2 s to 4.5 s (2.5 s). Arriving in
    // any order, with a timing of step 1 among them.
    CHECK(windows.add(timing(3, 0, 1.0, 3'000'000'000, 4'500'000'000)).empty());
    CHECK(windows.add(timing(0, 0, 2.0, 1'000'000'000, 3'000'000'000)).empty());
    CHECK(windows.add(timing(0, 1, 0.5, 5'000'000'000, 6'000'000'000)).empty());
    CHECK(windows.add(timing(2, 0, 2.25, 2'000'000'000, 4'000'000'000)).empty());
    const auto out = windows.add(timing(1, 0, 1.5, 2'000'000'000, 4'000'000'000));
    REQUIRE(out.size() == 4);
    const int64_t pipeline[] = {0, 0, 1, 1};
    const int64_t stage[] = {0, 1, 0, 1};
    const double busy[] = {2.0, 1.5, 2.25, 1.0};
    const double idle[] = {1.0, 1.5, 0.25, 1.5};
    for (std::size_t i = 0; i < 4; ++i) {
      CAPTURE(i);
      CHECK(out[i].timing.worker == static_cast<int64_t>(i));
      CHECK(out[i].timing.step == 0);
      CHECK(out[i].timing.busy_s == busy[i]);
      CHECK(out[i].timing.peak_live == static_cast<int64_t>(i) + 1);
      CHECK(out[i].pipeline == pipeline[i]);
      CHECK(out[i].stage == stage[i]);
      CHECK(out[i].idle_s == doctest::Approx(idle[i]).epsilon(1e-12));
    }
    // Step 0 is forgotten: its workers may report it anew; step 1 still waits for three.
    CHECK(windows.add(timing(1, 1, 0.5, 5'000'000'000, 6'000'000'000)).empty());
    CHECK(windows.add(timing(2, 1, 0.5, 5'000'000'000, 6'000'000'000)).empty());
    const auto one = windows.add(timing(3, 1, 0.5, 5'000'000'000, 6'000'000'000));
    REQUIRE(one.size() == 4);
    CHECK(one[0].idle_s == doctest::Approx(0.5).epsilon(1e-12));
  }

  TEST_CASE("stage_windows: idle is never negative") {
    stage_windows windows(1, 1);
    const auto out = windows.add(timing(0, 0, 2.0, 0, 1'000'000'000));  // busy beyond its window
    REQUIRE(out.size() == 1);
    CHECK(out[0].idle_s == 0.0);
    CHECK(out[0].pipeline == 0);
    CHECK(out[0].stage == 0);
  }

  TEST_CASE("stage_windows: a second timing or an unknown worker throws") {
    stage_windows windows(1, 2);
    CHECK(windows.add(timing(0, 0, 1.0, 0, 1)).empty());
    CHECK_THROWS_WITH_AS(windows.add(timing(0, 0, 1.0, 0, 1)),
                         "a second stage timing of worker 0 for step 0", std::invalid_argument);
    CHECK_THROWS_WITH_AS(windows.add(timing(2, 0, 1.0, 0, 1)),
                         "stage timing of worker 2, there are 2", std::invalid_argument);
    CHECK_THROWS_AS(windows.add(timing(-1, 0, 1.0, 0, 1)), std::invalid_argument);
    CHECK(windows.add(timing(1, 0, 1.0, 0, 1)).size() == 2);  // nothing was kept of them
  }

  // ---- run_status and records ---------------------------------------------------------------

  TEST_CASE("run_status: to_string and parse_run_status are inverses") {
    CHECK(std::string(to_string(run_status::succeeded)) == "succeeded");
    CHECK(std::string(to_string(run_status::failed)) == "failed");
    CHECK(std::string(to_string(run_status::not_started)) == "not started");
    for (auto s : {run_status::succeeded, run_status::failed, run_status::not_started}) {
      const auto back = parse_run_status(to_string(s));
      REQUIRE(back.has_value());
      CHECK(*back == s);
    }
    CHECK(!parse_run_status("").has_value());
    CHECK(!parse_run_status("not_started").has_value());
    CHECK(!parse_run_status("Succeeded").has_value());
    CHECK(!parse_run_status("succeeded ").has_value());
    CHECK(!parse_run_status("garbage").has_value());
  }

  TEST_CASE("records: to_json names the event and every field") {
    records::step s;
    s.step = 7;
    s.epoch = 1;
    s.loss = 0.5;
    s.samples = 256;
    s.samples_per_s = 1000.0;
    s.step_s = 0.25;
    s.reduce_s = 0.125;
    s.t = 3.5;
    s.lr = 0.01;
    const auto j = records::to_json(s);
    CHECK(j.size() == 10);
    CHECK(j.at("lr") == 0.01);
    CHECK(j.at("event") == "step");
    CHECK(j.at("step") == 7);
    CHECK(j.at("epoch") == 1);
    CHECK(j.at("loss") == 0.5);
    CHECK(j.at("samples") == 256);
    CHECK(j.at("samples_per_s") == 1000.0);
    CHECK(j.at("step_s") == 0.25);
    CHECK(j.at("reduce_s") == 0.125);
    CHECK(j.at("t") == 3.5);

    records::waited w;
    w.worker = 2;
    w.clock = 5;
    w.wait_s = 1.5;
    const auto jw = records::to_json(w);
    CHECK(jw.size() == 4);
    CHECK(jw.at("event") == "waited");
    CHECK(jw.at("worker") == 2);
    CHECK(jw.at("clock") == 5);
    CHECK(jw.at("wait_s") == 1.5);

    records::phase ph;
    ph.step = 10;
    ph.policy = "local_sgd";
    ph.t = 2.0;
    const auto jp = records::to_json(ph);
    CHECK(jp.at("event") == "phase");
    CHECK(jp.at("step") == 10);
    CHECK(jp.at("policy") == "local_sgd");

    records::failure f;
    f.error = "replica 2 ended with weights different from replica 0";
    const auto jf = records::to_json(f);
    CHECK(jf.size() == 3);
    CHECK(jf.at("event") == "failure");
    CHECK(jf.at("error") == f.error);

    records::stage_step st;
    st.worker = 3;
    st.pipeline = 1;
    st.stage = 1;
    st.idle_s = 0.75;
    st.peak_live_activations = 4;
    const auto js = records::to_json(st);
    CHECK(js.at("event") == "stage_step");
    CHECK(js.at("pipeline") == 1);
    CHECK(js.at("stage") == 1);
    CHECK(js.at("idle_s") == 0.75);
    CHECK(js.at("peak_live_activations") == 4);
  }

  // ---- check_data_matches -------------------------------------------------------------------

  TEST_CASE("check_data_matches: the loaded data must be what the plan was made from") {
    const auto facts = [](int64_t train, int64_t validation, int64_t test, int64_t classes) {
      data_facts f;
      f.train_rows = train;
      f.validation_rows = validation;
      f.test_rows = test;
      f.classes = classes;
      return f;
    };
    const auto loaded = tiny_dataset(4, 2, 10);
    data_config synthetic;
    synthetic.kind = data_kind::synthetic;
    CHECK(facts_of(loaded).train_rows == 4);
    CHECK(facts_of(loaded).test_rows == 2);
    CHECK(facts_of(loaded).classes == 10);
    CHECK_NOTHROW(check_data_matches(facts(4, 0, 2, 10), loaded, synthetic));
    CHECK_THROWS_WITH_AS(check_data_matches(facts(5, 0, 2, 10), loaded, synthetic),
                         "the synthetic set: holds 4 training rows, the plan (synthetic) expects 5",
                         data_error);
    CHECK_THROWS_WITH_AS(check_data_matches(facts(4, 0, 3, 10), loaded, synthetic),
                         "the synthetic set: holds 2 test rows, the plan (synthetic) expects 3",
                         data_error);
    CHECK_THROWS_WITH_AS(check_data_matches(facts(4, 0, 2, 7), loaded, synthetic),
                         "the synthetic set: holds 10 classes, the plan (synthetic) expects 7",
                         data_error);
    CHECK_THROWS_WITH_AS(check_data_matches(facts(3, 1, 2, 10), loaded, synthetic),
                         "the synthetic set: holds 4 training rows, the plan (synthetic) expects 3",
                         data_error);

    data_config files;
    files.kind = data_kind::fashion_mnist;
    files.path = "/data/fm";
    CHECK_THROWS_WITH_AS(check_data_matches(facts(60000, 0, 2, 10), loaded, files),
                         "/data/fm: holds 4 training rows, the plan (fashion_mnist) expects 60000",
                         data_error);
  }

  TEST_CASE("step_watch: a fixed limit, and the workers furthest behind") {
    step_watch watch(3, 2.0);
    CHECK_FALSE(watch.overdue(100).has_value());  // not started
    watch.start(10);
    watch.heard(0, 0);
    CHECK_FALSE(watch.overdue(12).has_value());
    auto stall = watch.overdue(12.5);
    REQUIRE(stall.has_value());
    CHECK(stall->last_step == -1);
    CHECK(stall->limit_s == 2.0);
    CHECK(stall->silent_s == doctest::Approx(2.5));
    CHECK(stall->behind == std::vector<int64_t>{1, 2});
    CHECK(stall->behind_step == -1);
    watch.heard(1, 0);
    watch.heard(2, 0);
    watch.completed(0, 12.6);
    watch.heard(0, 1);
    watch.heard(2, 1);
    watch.heard(7, 1);  // out of range: ignored
    CHECK_FALSE(watch.overdue(14.6).has_value());
    stall = watch.overdue(14.7);
    REQUIRE(stall.has_value());
    CHECK(stall->last_step == 0);
    CHECK(stall->behind == std::vector<int64_t>{1});
    CHECK(stall->behind_step == 0);
    watch.heard(1, 1);  // all together (a stalled ring): every worker is named
    CHECK(watch.overdue(14.7)->behind == std::vector<int64_t>{0, 1, 2});
  }

  TEST_CASE("step_watch: derived from the run's own step times") {
    step_watch watch(1, 0, /*startup_s=*/60, /*floor_s=*/5);
    watch.start(0);
    CHECK(watch.limit_s() == 60);  // until the first step completes
    watch.completed(0, 50);        // the first step's compilation is not a gap
    CHECK(watch.limit_s() == 5);
    watch.completed(1, 50.1);
    CHECK(watch.limit_s() == 5);  // 20 x 0.1 s is below the floor
    watch.completed(2, 51.1);
    CHECK(watch.limit_s() == doctest::Approx(20));  // 20 x the longest gap, 1 s
    watch.completed(3, 51.2);
    CHECK(watch.limit_s() == doctest::Approx(20));  // the longest gap stays
    CHECK_FALSE(watch.overdue(71.1).has_value());
    CHECK(watch.overdue(71.3).has_value());
  }
}
