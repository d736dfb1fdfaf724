// The confusion matrix of an evaluation: counted from logits and labels, added up over shards as
// the loss and metric sums are, its diagonal the metric's correct rows; too many classes count
// nothing; the run tracker keeps the last complete evaluation's for the end of the run.
#include "core/config/parse_job.hpp"
#include "core/data/synthetic.hpp"
#include "core/ensemble/ensemble_engine.hpp"
#include "core/metrics/record_reader.hpp"
#include "core/train/confusion.hpp"
#include "core/train/engine_plans.hpp"
#include "core/train/replica_engine.hpp"
#include "core/train/run_tracker.hpp"
#include "temp_folder.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

#include <fstream>
#include <numeric>

using namespace troupe;

TEST_SUITE("report") {
  TEST_CASE("confusion counts: row the true class, column the predicted one") {
    // Rows predicted 2, 0, 1, 1 (their largest scores) of classes 2, 0, 0, 1.
    const auto logits = at::tensor({0.f, 1.f, 5.f,  //
                                    3.f, 1.f, 2.f,  //
                                    0.f, 9.f, 1.f,  //
                                    -1.f, 0.f, -2.f})
                            .view({4, 3});
    const auto labels = at::tensor({2, 0, 0, 1}, at::kLong);
    std::vector<int64_t> counts;
    add_confusion(counts, logits, labels, 3);
    CHECK(counts == std::vector<int64_t>{1, 1, 0, 0, 1, 0, 0, 0, 1});
    add_confusion(counts, logits, labels, 3);  // adds up
    CHECK(counts[0] == 2);
    CHECK(confusion_classes(counts) == 3);

    std::vector<int64_t> other;
    add_counts(other, counts);
    CHECK(other == counts);
    add_counts(other, {});
    CHECK(other == counts);
    CHECK_THROWS_AS(add_counts(other, {1, 2}), std::invalid_argument);
    CHECK_THROWS_AS(confusion_classes({1, 2, 3}), std::invalid_argument);

    std::vector<int64_t> none;  // above max_confusion_classes nothing is counted
    add_confusion(none, at::zeros({2, max_confusion_classes + 1}), at::zeros({2}, at::kLong),
                  max_confusion_classes + 1);
    CHECK(none.empty());
  }

  TEST_CASE("an evaluation's counts: one per row, the diagonal its correct rows, shards add up") {
    const auto job =
        parse_job({{"seed", 5},
                   {"data", {{"type", "synthetic"}, {"train_samples", 256}, {"test_samples", 250}}},
                   {"model", {{"hidden", {16}}}},
                   {"training", {{"steps", 3}, {"batch_size", 32}}}});
    const auto data = std::make_shared<const dataset>(make_synthetic(256, 250, 1.0, 5));
    const auto start = initial_weights(settings_of(job), data->classes);
    replica_engine engine(replica_plan_of(job, 0), data, start);
    const auto whole = engine.evaluate(data->test, {0, 250});
    REQUIRE(whole.confusion.size() == static_cast<std::size_t>(data->classes * data->classes));
    CHECK(std::accumulate(whole.confusion.begin(), whole.confusion.end(), int64_t{0}) == 250);
    int64_t diagonal = 0;
    for (int64_t c = 0; c < data->classes; ++c)
      diagonal += whole.confusion[static_cast<std::size_t>(c * (data->classes + 1))];
    CHECK(static_cast<double>(diagonal) == whole.metric_sum);
    auto halves = engine.evaluate(data->test, {0, 125}).confusion;
    add_counts(halves, engine.evaluate(data->test, {125, 250}).confusion);
    CHECK(halves == whole.confusion);

    // The tracker adds the shards and writes the last complete evaluation's once, at the end.
    const temp_folder tmp;
    const auto path = (tmp.path / "metrics.jsonl").string();
    {
      jsonl_writer metrics(path);
      run_tracker tracker(2, step_rules(3, 8, 3), &metrics);
      tracker.on_eval_shard(0, 2, 1.0, 60, 125, 0.1, 2,
                            engine.evaluate(data->test, {0, 125}).confusion);
      tracker.on_eval_shard(1, 2, 1.0, 60, 125, 0.1, 2,
                            engine.evaluate(data->test, {125, 250}).confusion);
      tracker.record_last_confusion();
      tracker.record_last_confusion();  // once
    }
    std::ifstream in(path);
    std::string line;
    int confusions = 0;
    while (std::getline(in, line)) {
      const auto record = records::parse_record(nlohmann::json::parse(line));
      if (const auto* c = record ? std::get_if<records::confusion>(&*record) : nullptr) {
        ++confusions;
        CHECK(c->step == 2);
        CHECK(c->split == "test");
        CHECK(c->counts == whole.confusion);
      }
    }
    CHECK(confusions == 1);
  }

  TEST_CASE("a stacked ensemble counts its averaged prediction") {
    const auto job =
        parse_job({{"seed", 6},
                   {"data", {{"type", "synthetic"}, {"train_samples", 256}, {"test_samples", 200}}},
                   {"model", {{"hidden", {16}}}},
                   {"ensemble", {{"members", 3}}},
                   {"training", {{"steps", 3}, {"batch_size", 32}}}});
    const auto data = std::make_shared<const dataset>(make_synthetic(256, 200, 1.0, 6));
    ensemble_engine engine(ensemble_plan_of(job), data);
    engine.step(0, job.optimizer.lr);
    const auto r = engine.evaluate(data->test);
    REQUIRE(r.confusion.size() == static_cast<std::size_t>(data->classes * data->classes));
    CHECK(std::accumulate(r.confusion.begin(), r.confusion.end(), int64_t{0}) == 200);
    int64_t diagonal = 0;
    for (int64_t c = 0; c < data->classes; ++c)
      diagonal += r.confusion[static_cast<std::size_t>(c * (data->classes + 1))];
    CHECK(diagonal == r.ensemble_correct);
  }
}
