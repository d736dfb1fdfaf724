// Suites: expansion of jobs and sweeps, placement as a pure queue (jobs outnumbering devices,
// the concurrency cap, backfill, jobs no device can hold), and the leaderboard's order.
#include "core/errors.hpp"
#include "core/suite/placement.hpp"
#include "core/suite/suite_config.hpp"
#include "core/suite/suite_results.hpp"
#include "job_problems.hpp"

#include <doctest/doctest.h>

using namespace troupe;
using nlohmann::json;

namespace {

std::vector<std::string> problems_of(const json& j) {
  return test::problems_of([](const json& x) { return parse_suite(x); }, j);
}

using test::any_contains;

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
    CHECK(suite.jobs[0].job.name == "wide-0");
    CHECK(suite.jobs[2].job.name == "wide-2");
    CHECK(suite.jobs[2].job.seed == 3);
    CHECK(suite.jobs[0].job.model.hidden == std::vector<int64_t>{512});
    CHECK(suite.jobs[0].job.optimizer.lr == 0.1);  // from the base
    CHECK(suite.jobs[3].job.name == "base-3");
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
    CHECK(any_contains(problems_of({{"jobs", {{{"limits", {{"memory_mb", 0}}}}}}}),
                       "/jobs/0/limits/memory_mb: must be > 0"));
    CHECK(any_contains(problems_of({{"jobs", {json::object()}},
                                    {"devices", {{{"device", "cuda:0"}, {"threads", 1}}}}}),
                       "/devices/0/device: cuda:0 is not available: this build of troupe has no "
                       "CUDA"));
    CHECK(any_contains(problems_of({{"jobs", {{{"name", "g"}, {"device", "cuda"}}}}}),
                       "job g: asks for device \"cuda\", which no entry of devices offers"));
    CHECK(any_contains(
        problems_of({{"devices", {{{"device", "cpu"}, {"threads", 2}}}},
                     {"jobs", {{{"name", "big"}, {"parallelism", {{"replicas", 4}}}}}}}),
        "job big: needs 4 threads on cpu, the largest such device offers 2"));
    CHECK(any_contains(problems_of({{"jobs", {json::object()}}, {"max_concurrent", 0}}),
                       "/max_concurrent: must be an integer >= 1"));
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

  TEST_CASE("the leaderboard ranks succeeded jobs by accuracy, then failed ones unranked") {
    std::vector<suite_job_result> results(4);
    results[0] = {"a", run_status::succeeded, "", "cpu", json::object(), 0.80, 0.5, 0.4};
    results[1] = {"b",          run_status::failed, "boom",      "cpu", json::object(),
                  std::nullopt, std::nullopt,       std::nullopt};
    results[2] = {"c", run_status::succeeded, "", "cpu", json::object(), 0.90, 0.3, 0.2};
    results[3] = {"d", run_status::succeeded, "", "cpu", json::object(), 0.90, 0.2, 0.2};
    CHECK(rank_jobs(results) == std::vector<std::size_t>{3, 2, 0, 1});
    const auto board = leaderboard_json(results);
    CHECK(board[0]["name"] == "d");
    CHECK(board[0]["rank"] == 1);
    CHECK(board[3]["rank"].is_null());
    CHECK(board[3]["error"] == "boom");
    const auto table = render_leaderboard(results);
    CHECK(table.find("failed: boom") != std::string::npos);
  }
}
