// Suites: expansion of jobs and sweeps, random search and its spaces, placement as a pure queue
// (jobs outnumbering devices, the concurrency cap, backfill, jobs no device can hold), and the
// rules that stop jobs early (asha, stop_losers). What a suite's results say is in
// test_suite_results.cpp.
#include "core/errors.hpp"
#include "core/suite/asha.hpp"
#include "core/suite/placement.hpp"
#include "core/suite/stop_losers.hpp"
#include "core/suite/suite_config.hpp"
#include "job_problems.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

using namespace troupe;
using nlohmann::json;

namespace {

std::vector<std::string> problems_of(const json& j) {
  return test::problems_of([](const json& x) { return parse_suite(x); }, j);
}

using test::any_contains;

// Two regression jobs with a validation split (the plan, not the suite's parse, checks that the
// data's targets fit the loss).
json regression_suite() {
  return {{"data", {{"type", "synthetic"}, {"validation", 0.1}}},
          {"training", {{"loss", "mse"}}},
          {"sweep", {{"seed", {1, 2}}}}};
}

std::vector<std::size_t> jobs_of(const std::vector<placement>& started) {
  std::vector<std::size_t> jobs;
  for (const auto& p : started)
    jobs.push_back(p.job);
  return jobs;
}

}  // namespace

TEST_SUITE("suite") {
  TEST_CASE("jobs merge onto the base; a sweep multiplies them; names are unique") {
    const json file = {{"name", "base"},
                       {"optimizer", {{"lr", 0.1}}},
                       {"devices", {{{"device", "cpu"}, {"threads", 4}}}},
                       {"jobs",
                        {{{"name", "wide"}, {"model", {{"hidden", {512}}}}},
                         {{"optimizer", {{"type", "adam"}, {"lr", 0.001}}}}}},
                       {"sweep", {{"seed", {1, 2, 3}}}}};
    const auto suite = parse_suite(file);
    CHECK(suite.entries == 2);
    CHECK(suite.combinations == 3);
    REQUIRE(suite.jobs.size() == 6);
    CHECK(suite.jobs[0].job.name == "wide-seed=1");
    CHECK(suite.jobs[2].job.name == "wide-seed=3");
    CHECK(suite.jobs[2].job.seed == 3);
    CHECK(suite.jobs[0].job.model.hidden == std::vector<int64_t>{512});
    CHECK(suite.jobs[0].job.optimizer.lr == 0.1);  // from the base
    CHECK(suite.jobs[3].job.name == "base-seed=1");
    CHECK(suite.jobs[3].job.optimizer.kind == optimizer_kind::adam);
    CHECK(suite.jobs[3].overrides["seed"] == 1);
    CHECK(suite.jobs[5].request.threads == 1);
    CHECK(suite.max_concurrent == 6);
    CHECK(is_suite(file));
    CHECK(!is_suite(json{{"name", "x"}}));
    // A sweep alone, over a nested key.
    const auto lrs = parse_suite({{"sweep", {{"optimizer.lr", {0.01, 0.1}}}}});
    REQUIRE(lrs.jobs.size() == 2);
    CHECK(lrs.jobs[1].job.optimizer.lr == 0.1);
    CHECK(lrs.jobs[1].retries == 0);
    const auto retried =
        parse_suite({{"retries", 3}, {"jobs", {{{"name", "a"}}, {{"name", "b"}, {"retries", 0}}}}});
    CHECK(retried.jobs[0].retries == 3);
    CHECK(retried.jobs[1].retries == 0);
    CHECK(retried.jobs[1].job.name == "b");  // nothing swept: the entry's own name
  }

  TEST_CASE("random search: trials drawn from the seed, within each space, beside a sweep") {
    const json space = {{"optimizer.lr", {{"log_uniform", {1e-4, 0.1}}}},
                        {"optimizer.momentum", {{"uniform", {0.8, 0.99}}}},
                        {"training.batch_size", {{"int", {16, 18}}}},
                        {"model.hidden", {{"choice", {json::array({8}), json::array({16, 8})}}}}};
    const json file = {{"seed", 3}, {"search", {{"trials", 40}, {"space", space}}}};
    CHECK(is_suite(file));
    const auto suite = parse_suite(file);
    REQUIRE(suite.jobs.size() == 40);
    std::set<int64_t> batches;
    std::set<std::string> hiddens;
    double smallest_lr = 1;
    for (const auto& j : suite.jobs) {
      const auto lr = j.overrides.at("optimizer.lr").get<double>();
      CHECK(lr >= 1e-4);
      CHECK(lr <= 0.1);
      smallest_lr = std::min(smallest_lr, lr);
      const auto momentum = j.overrides.at("optimizer.momentum").get<double>();
      CHECK(momentum >= 0.8);
      CHECK(momentum <= 0.99);
      CHECK(j.job.optimizer.momentum == momentum);  // applied to the job, not only listed
      batches.insert(j.job.training.batch_size);
      hiddens.insert(j.overrides.at("model.hidden").dump());
    }
    CHECK(smallest_lr < 1e-3);                        // a log scale reaches the low decades
    CHECK(batches == std::set<int64_t>{16, 17, 18});  // both ends included
    CHECK(hiddens.size() == 2);
    // The same file draws the same trials; another seed others; the suite's seed by default.
    CHECK(parse_suite(file).jobs[7].overrides == suite.jobs[7].overrides);
    auto reseeded = file;
    reseeded["search"]["seed"] = 4;
    CHECK(parse_suite(reseeded).jobs[7].overrides != suite.jobs[7].overrides);
    reseeded["search"]["seed"] = 3;
    CHECK(parse_suite(reseeded).jobs[7].overrides == suite.jobs[7].overrides);

    // With a sweep: every trial for each combination.
    auto both = file;
    both["search"]["trials"] = 3;
    both["sweep"] = {{"seed", {1, 2}}};
    const auto crossed = parse_suite(both);
    REQUIRE(crossed.jobs.size() == 6);
    CHECK(crossed.jobs[0].overrides.at("optimizer.lr") ==
          crossed.jobs[1].overrides.at("optimizer.lr"));
    CHECK(crossed.jobs[0].job.seed == 1);
    CHECK(crossed.jobs[1].job.seed == 2);
  }

  TEST_CASE("random search: draws rounded to 6 digits stay within a narrow range") {
    const json space = {{"optimizer.lr", {{"uniform", {0.1234564, 0.1234566}}}},
                        {"optimizer.momentum", {{"log_uniform", {0.9000004, 0.9000006}}}}};
    const auto suite = parse_suite({{"search", {{"trials", 50}, {"space", space}}}});
    for (const auto& j : suite.jobs) {
      const auto lr = j.overrides.at("optimizer.lr").get<double>();
      CHECK(lr >= 0.1234564);
      CHECK(lr <= 0.1234566);
      const auto momentum = j.overrides.at("optimizer.momentum").get<double>();
      CHECK(momentum >= 0.9000004);
      CHECK(momentum <= 0.9000006);
    }
  }

  TEST_CASE("random search: a bad space is refused, naming the key and what it must be") {
    const auto with = [](json search) { return json{{"search", std::move(search)}}; };
    const json lr = {{"optimizer.lr", {{"log_uniform", {0.0, 0.1}}}}};
    CHECK(any_contains(problems_of(with({{"space", lr}})), "/search/trials: is required"));
    CHECK(any_contains(problems_of(with({{"trials", 2}, {"space", lr}})),
                       "/search/space/optimizer.lr/log_uniform: must have low > 0"));
    CHECK(any_contains(problems_of(with({{"trials", 2}, {"space", json::object()}})),
                       "/search/space: must be a non-empty object"));
    CHECK(any_contains(
        problems_of(with({{"trials", 2}, {"space", {{"optimizer.lr", {{"normal", {0, 1}}}}}}})),
        "/search/space/optimizer.lr/normal: unknown kind (known: uniform, log_uniform, int, "
        "choice)"));
    CHECK(any_contains(
        problems_of(with({{"trials", 2}, {"space", {{"training.steps", {{"int", {1.5, 9}}}}}}})),
        "/search/space/training.steps/int: must be [low, high], two integers"));
    CHECK(any_contains(
        problems_of(
            with({{"trials", 2}, {"space", {{"optimizer.lr", {{"uniform", {0.5, 0.1}}}}}}})),
        "must have low < high"));
    CHECK(any_contains(problems_of(with({{"trials", 0}, {"space", lr}})), "/search/trials"));
    CHECK(any_contains(
        problems_of(
            with({{"trials", 2}, {"space", {{"training.steps", {{"int", {1, INT64_MAX}}}}}}})),
        "/search/space/training.steps/int: must lie within ±2^53"));
    // 2^53 + 1 rounds to 2^53 as a double, and passed.
    const int64_t past = (int64_t{1} << 53) + 1;
    CHECK(any_contains(
        problems_of(with({{"trials", 2}, {"space", {{"seed", {{"int", {past - 3, past}}}}}}})),
        "/search/space/seed/int: must lie within ±2^53"));
    CHECK(any_contains(
        problems_of(with({{"trials", 2}, {"space", {{"seed", {{"int", {INT64_MIN, 0}}}}}}})),
        "/search/space/seed/int: must lie within ±2^53"));
    CHECK_FALSE(any_contains(
        problems_of(with({{"trials", 2}, {"space", {{"seed", {{"int", {past - 4, past - 1}}}}}}})),
        "±2^53"));
    CHECK(any_contains(
        problems_of(
            with({{"trials", 2}, {"space", {{"optimizer.lr", {{"uniform", {-1e308, 1e308}}}}}}})),
        "their distance too"));
    CHECK(any_contains(problems_of(with({{"trials", 2}, {"space", lr}, {"zz", 1}})),
                       "/search/zz: unknown key"));
    // The job is named by its draw ("suite-lrr=0.1374"), as a job that parses would be.
    const auto misspelled = problems_of(
        {{"search", {{"trials", 2}, {"space", {{"optimizer.lrr", {{"uniform", {0.1, 0.2}}}}}}}}});
    CHECK(any_contains(misspelled, "job suite-lrr=0.1"));
    CHECK(any_contains(misspelled, ": /optimizer/lrr: unknown key (did you mean \"lr\"?"));
    CHECK(any_contains(
        problems_of({{"sweep", {{"optimizer.lr", {0.1}}}},
                     {"search",
                      {{"trials", 2}, {"space", {{"optimizer.lr", {{"uniform", {0.1, 0.2}}}}}}}}}),
        "/search/space/optimizer.lr: also in sweep"));
    CHECK(any_contains(problems_of({{"sweep", {{"seed", {1, 2, 3, 4}}}},
                                    {"search",
                                     {{"trials", 5000},
                                      {"space", {{"optimizer.lr", {{"uniform", {0.1, 0.2}}}}}}}}}),
                       "/search/trials: the suite expands to more than 10000 jobs"));
  }

  TEST_CASE("asha: rungs, the quantile cutoff, the first at a rung goes on") {
    CHECK(*quantile({1, 2, 3, 4}, 0.5) == doctest::Approx(2.5));
    CHECK(*quantile({4, 1, 3}, 2.0 / 3) == doctest::Approx(3 + (4 - 3) * (4.0 / 3 - 1)));
    CHECK(!quantile({}, 0.5));

    asha_rungs rungs({10, 3}, 200);
    CHECK(rungs.milestones() == std::vector<int64_t>{10, 30, 90});
    CHECK(!rungs.on_evaluation(0, 5, 0.1));            // before the first rung: nothing to judge
    CHECK(!rungs.on_evaluation(0, 10, 0.5));           // first at rung 10: goes on
    CHECK(!rungs.on_evaluation(1, 10, 0.6));           // above the cutoff of {0.5}
    const auto low = rungs.on_evaluation(2, 10, 0.4);  // cutoff of {0.5, 0.6} at 2/3: 0.5667
    REQUIRE(low);
    CHECK(low->find(
              "stopped by asha at the rung of 10 steps: validation accuracy 0.4 < 0.566667") == 0);
    CHECK(!rungs.on_evaluation(2, 12, 0.9));  // judged at rung 10 already, no new rung
    // A job that reports first past two rungs is judged at the higher one only.
    CHECK(!rungs.on_evaluation(3, 35, 0.2));   // first at rung 30
    CHECK(rungs.on_evaluation(4, 30, 0.1));    // below {0.2}
    CHECK(!rungs.on_evaluation(4, 10, 0.99));  // an older evaluation read late: judged at 30
    // No rung at or past the longest job's end; a huge min_steps has none.
    CHECK(asha_rungs({100, 2}, 100).milestones().empty());
    CHECK(asha_rungs({int64_t{1} << 40, 1000}, INT64_MAX).milestones().size() <= 3);
  }

  TEST_CASE("asha: parsed, and refused with stop_losers or without a validation set") {
    const json base = {{"data", {{"type", "synthetic"}, {"validation", 0.1}}},
                       {"sweep", {{"seed", {1, 2}}}}};
    auto file = base;
    file["asha"] = {{"min_steps", 20}};
    REQUIRE(parse_suite(file).asha.has_value());
    CHECK(parse_suite(file).asha->reduction == 3);
    CHECK(!parse_suite(base).asha.has_value());
    file["asha"] = {{"reduction", 2}};
    CHECK(any_contains(problems_of(file), "/asha/min_steps: is required"));
    file["asha"] = {{"min_steps", 20}, {"reduction", 1}};
    CHECK(any_contains(problems_of(file), "/asha/reduction"));
    // A bad min_steps left reduction unread, then called an unknown key.
    file["asha"] = {{"min_steps", 0}, {"reduction", 3}};
    CHECK(any_contains(problems_of(file), "/asha/min_steps"));
    CHECK_FALSE(any_contains(problems_of(file), "unknown key"));
    file["asha"] = {{"min_steps", 20}};
    file["stop_losers"] = {{"after", 2}};
    CHECK(any_contains(problems_of(file), "/asha: give asha or stop_losers, not both"));
    file.erase("stop_losers");
    file["data"].erase("validation");
    CHECK(any_contains(problems_of(file), "/asha: needs every job to hold out a validation set"));
  }

  TEST_CASE("bad suites name the job or key at fault") {
    CHECK(any_contains(problems_of({{"jobs", json::array()}}), "/jobs: must be a non-empty array"));
    CHECK(any_contains(problems_of({{"jobs", {1}}}), "/jobs/0: must be an object"));
    CHECK(any_contains(problems_of({{"sweep", {{"seed", json::array()}}}}),
                       "/sweep/seed: must be a non-empty array"));
    CHECK(any_contains(problems_of({{"jobs", {{{"name", "a"}, {"optimizer", {{"lr", -1}}}}}}}),
                       "job a (/jobs/0): /optimizer/lr: must be > 0"));
    CHECK(any_contains(problems_of({{"jobs", {{{"name", "a"}}, {{"name", "a"}}}}}),
                       "\"a\" names two jobs"));
    // A job named as the suite folder's own files took their place (summary.json lost).
    CHECK(any_contains(problems_of({{"jobs", {{{"name", "summary.json"}}, {{"name", "logs"}}}}}),
                       "/jobs/0/name: \"summary.json\" is the suite folder's own file; a job's "
                       "folder needs another name"));
    CHECK(any_contains(problems_of({{"jobs", {{{"name", "summary.json"}}, {{"name", "logs"}}}}}),
                       "/jobs/1/name: \"logs\" is the suite folder's own folder"));
    CHECK(any_contains(problems_of({{"jobs", {{{"limits", {{"memory_mb", 0}}}}}}}),
                       "/jobs/0/limits/memory_mb: must be > 0"));
    CHECK(any_contains(problems_of({{"jobs", {{{"retries", 101}}}}}),
                       "/jobs/0/retries: must be an integer from 0 to 100, got 101"));
    CHECK(any_contains(problems_of({{"jobs", {{{"retries", "twice"}}}}}),
                       "/jobs/0/retries: must be an integer from 0 to 100, got \"twice\""));
    CHECK(any_contains(problems_of({{"jobs", {json::object()}},
                                    {"devices", {{{"device", "cuda:0"}, {"threads", 1}}}}}),
                       "/devices/0/device: cuda:0 is not available: this build of troupe has no "
                       "CUDA"));
    CHECK(any_contains(problems_of({{"jobs", {{{"name", "g"}, {"device", "cuda"}}}}}),
                       "job g: asks for device \"cuda\", which no entry of devices offers"));
    // A job's rules see its device kind: gpu_memory_mb is refused on a CPU job only (the CPU
    // build refuses the GPU job too, but for the device it asks for, not for its cap).
    CHECK(any_contains(
        problems_of({{"jobs", {{{"name", "c"}, {"gpu_memory_mb", 64}}}}}),
        "job c (/jobs/0): /gpu_memory_mb: caps what the job's process holds on its GPUs"));
    CHECK_FALSE(any_contains(
        problems_of({{"jobs", {{{"name", "g"}, {"device", "cuda"}, {"gpu_memory_mb", 64}}}}}),
        "/gpu_memory_mb"));
    CHECK(any_contains(
        problems_of({{"devices", {{{"device", "cpu"}, {"threads", 2}}}},
                     {"jobs", {{{"name", "big"}, {"parallelism", {{"replicas", 4}}}}}}}),
        "job big: needs 4 threads on cpu, the largest such device offers 2"));
    CHECK(any_contains(problems_of({{"jobs", {json::object()}}, {"max_concurrent", 0}}),
                       "/max_concurrent: must be an integer >= 1"));
    // Found probing as a hostile user: the suite's own name named its default folder unchecked
    // ("../../x" wrote outside runs/) when every job named itself.
    for (const char* name : {"../../x", "", "a/b", "..", "\xff"}) {
      CAPTURE(name);
      CHECK(any_contains(problems_of({{"name", name}, {"jobs", {{{"name", "a"}}}}}),
                         "/name: must be a name of 1 to 64 characters"));
    }
    // An entry's key that the sweep (or the search) sets in every job was replaced silently,
    // and still listed as the entry's override.
    const json shadowed = {
        {"jobs", {{{"name", "a"}}, {{"name", "b"}, {"optimizer", {{"lr", 0.1}}}}}},
        {"sweep", {{"optimizer.lr", {0.01, 0.02}}}}};
    CHECK(any_contains(problems_of(shadowed),
                       "/jobs/1/optimizer/lr: also in sweep, which sets it in every job"));
    CHECK(problems_of(shadowed).size() == 1);  // once, not once per combination
    const json beside = {{"jobs", {{{"name", "b"}, {"optimizer", {{"type", "adam"}}}}}},
                         {"sweep", {{"optimizer.lr", {0.01, 0.02}}}}};
    CHECK(problems_of(beside).empty());
  }

  TEST_CASE("placement: jobs outnumbering the threads queue, in order, and take freed slots") {
    placement_queue q({{"cpu", 2}}, {{"cpu", 1}, {"cpu", 1}, {"cpu", 1}, {"cpu", 2}}, 10);
    CHECK(jobs_of(q.start_ready()) == std::vector<std::size_t>{0, 1});
    CHECK(q.start_ready().empty());
    q.finished(1);
    CHECK(jobs_of(q.start_ready()) == std::vector<std::size_t>{2});
    q.finished(0);
    CHECK(q.start_ready().empty());  // job 3 needs both threads
    q.finished(2);
    CHECK(jobs_of(q.start_ready()) == std::vector<std::size_t>{3});
    q.finished(3);
    CHECK(q.all_done());
    CHECK_THROWS_AS(q.finished(3), std::logic_error);
  }

  TEST_CASE("placement: the concurrency cap, backfill, several devices") {
    placement_queue capped({{"cpu", 8}}, {{"cpu", 1}, {"cpu", 1}, {"cpu", 1}}, 2);
    CHECK(capped.start_ready().size() == 2);
    CHECK(capped.running() == 2);
    // A big job waits; the small one behind it runs on what is free.
    placement_queue backfill({{"cpu", 3}}, {{"cpu", 2}, {"cpu", 2}, {"cpu", 1}}, 10);
    CHECK(jobs_of(backfill.start_ready()) == std::vector<std::size_t>{0, 2});
    placement_queue two({{"cpu", 1}, {"cuda:0", 1}, {"cuda:1", 1}},
                        {{"cuda", 1}, {"cuda", 1}, {"cpu", 1}, {"cuda:1", 1}}, 10);
    const auto started = two.start_ready();
    REQUIRE(started.size() == 3);
    CHECK(started[0].device == 1);
    CHECK(started[1].device == 2);
    CHECK(started[2].device == 0);
    two.finished(1);
    const auto next = two.start_ready();
    REQUIRE(next.size() == 1);
    CHECK(next[0].job == 3);
    CHECK(next[0].device == 2);
    CHECK_THROWS_AS(placement_queue({{"cpu", 1}}, {{"cpu", 2}}, 1), job_error);
  }

  TEST_CASE("stop_losers: the median rule") {
    CHECK(!median({}).has_value());
    CHECK(*median({0.3, 0.1, 0.2}) == 0.2);
    CHECK(*median({0.4, 0.1, 0.2, 0.3}) == 0.25);
    CHECK(!stop_loser_reason(3, 0.1, {}).has_value());  // nobody finished: nothing to compare
    CHECK(!stop_loser_reason(3, 0.74, {0.70, 0.74, 0.80}).has_value());  // at the median
    CHECK(*stop_loser_reason(3, 0.61, {0.70, 0.74, 0.80}) ==
          "stopped by stop_losers after 3 evaluations: validation accuracy 0.61 < median 0.74");
    CHECK(*stop_loser_reason(1, 0.5, {0.6}) ==
          "stopped by stop_losers after 1 evaluation: validation accuracy 0.5 < median 0.6");
    // Regression jobs compare losses: above the median is worse.
    const judged_figure loss{true};
    CHECK(!stop_loser_reason(3, 0.61, {0.70, 0.74, 0.80}, loss).has_value());
    CHECK(!stop_loser_reason(3, 0.74, {0.70, 0.74, 0.80}, loss).has_value());
    CHECK(*stop_loser_reason(3, 0.9, {0.70, 0.74, 0.80}, loss) ==
          "stopped by stop_losers after 3 evaluations: validation loss 0.9 > median 0.74");
  }

  TEST_CASE("stop_losers and asha on regression jobs: validation losses, the lower kept") {
    validation_history h(judged_figure{true});
    h.feed(
        "{\"event\":\"eval\",\"step\":9,\"validation_loss\":0.5,\"validation_mse\":0.5}\n"
        "{\"event\":\"eval\",\"step\":19,\"validation_loss\":0.25,\"validation_mse\":0.25}\n"
        "{\"event\":\"eval\",\"step\":29,\"test_loss\":0.2,\"test_mse\":0.2}\n");
    CHECK(h.figures() == std::vector<double>{0.5, 0.25});
    // A classifier's history skips them: they hold no accuracy.
    validation_history accuracies;
    accuracies.feed(
        "{\"event\":\"eval\",\"step\":9,\"validation_loss\":0.5,"
        "\"validation_mse\":0.5}\n");
    CHECK(accuracies.figures().empty());

    asha_rungs rungs({10, 3}, 200, judged_figure{true});
    CHECK(!rungs.on_evaluation(0, 10, 0.5));  // first at the rung
    CHECK(!rungs.on_evaluation(1, 10, 0.4));  // a lower loss goes on
    // The best third of {0.5, 0.4} ends at their 1/3 quantile, 0.4333: 0.45 is above it.
    const auto high = rungs.on_evaluation(2, 10, 0.45);
    REQUIRE(high);
    CHECK(high->find("stopped by asha at the rung of 10 steps: validation loss 0.45 > 0.433333") ==
          0);
    CHECK(!rungs.on_evaluation(3, 10, 0.1));
  }

  TEST_CASE("stop_losers: validation accuracies from a metrics file read in pieces") {
    validation_history h;
    h.feed("{\"event\":\"step\",\"step\":1,\"loss\":2.3}\n{\"event\":\"eval\",\"step\":1,");
    CHECK(h.figures().empty());  // the eval line is half written
    h.feed("\"validation_loss\":2.0,\"validation_accuracy\":0.25}\n");
    CHECK(h.figures() == std::vector<double>{0.25});
    h.feed("not json\n{\"event\":\"eval\",\"validation_accuracy\":0.5}\n");
    // The final evaluation of the test set is no validation evaluation.
    h.feed("{\"event\":\"eval\",\"test_accuracy\":0.9,\"weights\":\"final\"}\n{\"event\"");
    CHECK(h.figures() == std::vector<double>{0.25, 0.5});
    CHECK(*h.at(2) == 0.5);
    CHECK(!h.at(3).has_value());
    CHECK(!h.at(0).has_value());
  }

  TEST_CASE("stop_losers: parsed, checked, and refused without a validation set") {
    const json base = {{"data", {{"type", "synthetic"}, {"validation", 0.1}}},
                       {"sweep", {{"seed", {1, 2}}}}};
    auto file = base;
    file["stop_losers"] = {{"after", 3}};
    CHECK(parse_suite(file).stop_losers_after == 3);
    CHECK(!parse_suite(base).stop_losers_after.has_value());
    file["stop_losers"] = {{"after", 0}};
    CHECK(any_contains(problems_of(file), "/stop_losers/after: must be an integer"));
    file["stop_losers"] = {{"after", 2}, {"patience", 1}};
    CHECK(any_contains(problems_of(file), "/stop_losers/patience"));
    file["stop_losers"] = json::object();
    CHECK(any_contains(problems_of(file), "/stop_losers/after: is required"));
    file["stop_losers"] = 3;
    CHECK(any_contains(problems_of(file), "/stop_losers"));
    auto no_split = base;
    no_split["data"].erase("validation");
    no_split["stop_losers"] = {{"after", 2}};
    CHECK(any_contains(problems_of(no_split),
                       "/stop_losers: needs every job to hold out a validation set"));
    // One job without a split is enough to refuse.
    no_split = base;
    no_split["jobs"] = {{{"name", "x"}}, {{"name", "y"}, {"data", {{"validation", 0}}}}};
    no_split["stop_losers"] = {{"after", 2}};
    CHECK(any_contains(problems_of(no_split), "job y-"));
    // Regression jobs compare validation losses, of one loss only: an mse is no mae, and
    // classifiers compare accuracies.
    auto regression = regression_suite();
    regression["stop_losers"] = {{"after", 2}};
    CHECK(parse_suite(regression).judged.by_loss);
    auto classifiers = base;
    classifiers["stop_losers"] = {{"after", 2}};
    CHECK(!parse_suite(classifiers).judged.by_loss);
    regression["jobs"] = {{{"name", "x"}}, {{"name", "y"}, {"training", {{"loss", "l1"}}}}};
    CHECK(any_contains(problems_of(regression),
                       "/stop_losers: compares the jobs' validation losses, and job y-"));
    auto mixed = regression_suite();
    mixed["asha"] = {{"min_steps", 10}};
    mixed["jobs"] = {{{"name", "x"}}, {{"name", "y"}, {"training", {{"loss", "cross_entropy"}}}}};
    CHECK(any_contains(problems_of(mixed), "trains with training.loss cross_entropy where job x"));
  }

  TEST_CASE("stop_losers: a resumed run's evaluations replace those after its checkpoint") {
    validation_history h;
    h.feed(
        "{\"event\":\"eval\",\"step\":9,\"validation_accuracy\":0.4}\n"
        "{\"event\":\"eval\",\"step\":19,\"validation_accuracy\":0.7}\n"
        "{\"event\":\"eval\",\"step\":29,\"validation_accuracy\":0.8}\n"
        "{\"event\":\"resumed\",\"step\":19,\"path\":\"x\",\"skipped\":0,\"t\":0}\n"
        "{\"event\":\"eval\",\"step\":29,\"validation_accuracy\":0.8}\n");
    CHECK(h.figures() == std::vector<double>{0.4, 0.7, 0.8});
    CHECK(h.steps() == std::vector<int64_t>{9, 19, 29});
  }
}
