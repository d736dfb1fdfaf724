// What a suite's results say: the leaderboard's order (validation first, failures unranked),
// a stopped job's status read back, and seed groups with their mean and standard deviation.
#include "core/suite/seed_groups.hpp"
#include "core/suite/suite_results.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

using namespace troupe;
using nlohmann::json;

namespace {

// A finished job with its validation and test figures (nullopt: none).
suite_job_result job(const std::string& name, run_status status, const json& overrides,
                     std::optional<double> validation_accuracy,
                     std::optional<double> validation_loss, std::optional<double> test_accuracy,
                     double wall_s = 1) {
  suite_job_result r;
  r.name = name;
  r.status = status;
  r.overrides = overrides;
  r.validation_accuracy = validation_accuracy;
  r.validation_loss = validation_loss;
  r.test_accuracy = test_accuracy;
  r.test_loss = test_accuracy ? std::optional<double>(1 - *test_accuracy) : std::nullopt;
  r.wall_s = wall_s;
  if (status != run_status::succeeded)
    r.error = "cause of " + name;
  return r;
}

const json& stat(const json& setting, const char* figure, const char* which) {
  return setting.at(figure).at(which);
}

const ranking_figure by_validation{true};
const ranking_figure by_test{false};

// A regression job: its losses, no accuracy.
suite_job_result regression(const std::string& name, loss_kind loss, const json& overrides,
                            std::optional<double> validation_loss, double test_loss) {
  auto r = job(name, run_status::succeeded, overrides, std::nullopt, validation_loss, std::nullopt);
  r.loss = loss;
  r.test_loss = test_loss;
  return r;
}

}  // namespace

TEST_SUITE("suite") {
  TEST_CASE("without validation sets the leaderboard ranks by test accuracy, failures unranked") {
    const auto lr = [](double x) { return json{{"optimizer.lr", x}}; };
    std::vector<suite_job_result> results{
        job("a", run_status::succeeded, lr(1), std::nullopt, std::nullopt, 0.80),
        job("b", run_status::failed, lr(2), std::nullopt, std::nullopt, std::nullopt),
        job("c", run_status::succeeded, lr(3), std::nullopt, std::nullopt, 0.90),
        job("d", run_status::succeeded, lr(4), std::nullopt, std::nullopt, 0.90)};
    results[1].error = "boom";
    results[2].test_loss = 0.3;
    results[3].test_loss = 0.2;  // ties with c: the lower test loss first
    CHECK(ranking_of(results) == by_test);
    CHECK(rank_jobs(results) == std::vector<std::size_t>{3, 2, 0, 1});
    const auto board = leaderboard_json(results);
    CHECK(board["ranked_by"] == "test_accuracy");
    CHECK(!board.contains("settings"));  // no two jobs differ only in seed
    CHECK(board["jobs"][0]["name"] == "d");
    CHECK(board["jobs"][0]["rank"] == 1);
    CHECK(board["jobs"][3]["rank"].is_null());
    CHECK(board["jobs"][3]["error"] == "boom");
    const auto table = render_leaderboard(results);
    CHECK(table.find("failed: boom") != std::string::npos);
    CHECK(table.find("val acc") == std::string::npos);
    CHECK(!suite_succeeded(results));
  }

  TEST_CASE("with validation sets the leaderboard ranks by validation, test figures beside") {
    const auto lr = [](double x) { return json{{"optimizer.lr", x}}; };
    // By test accuracy the order would be b, a, c: the validation figures decide.
    std::vector<suite_job_result> results{
        job("a", run_status::succeeded, lr(1), 0.90, 0.30, 0.85),
        job("b", run_status::succeeded, lr(2), 0.80, 0.40, 0.95),
        job("c", run_status::succeeded, lr(3), 0.90, 0.20, 0.70),  // ties with a: lower loss first
        job("lost", run_status::stopped, lr(4), 0.10, 2.30, std::nullopt),
        job("broken", run_status::failed, lr(5), std::nullopt, std::nullopt, std::nullopt),
        job("no_split", run_status::succeeded, lr(6), std::nullopt, std::nullopt, 0.99),
        job("queued", run_status::not_started, lr(7), std::nullopt, std::nullopt, std::nullopt)};
    CHECK(ranking_of(results) == by_validation);
    // Ranked; completed without the ranking figure; stopped; failed; never started.
    CHECK(rank_jobs(results) == std::vector<std::size_t>{2, 0, 1, 5, 3, 4, 6});
    const auto board = leaderboard_json(results);
    CHECK(board["ranked_by"] == "validation_accuracy");
    const auto& rows = board["jobs"];
    CHECK(rows[0]["name"] == "c");
    CHECK(rows[0]["rank"] == 1);
    CHECK(rows[0]["test_accuracy"] == 0.70);
    CHECK(rows[0]["validation_loss"] == 0.20);
    CHECK(rows[2]["rank"] == 3);
    CHECK(rows[3]["rank"].is_null());  // no_split: succeeded, but nothing to rank it by
    CHECK(rows[4]["status"] == "stopped");
    CHECK(rows[4]["error"] == "cause of lost");
    CHECK(rows[4]["rank"].is_null());
    const auto table = render_leaderboard(results);
    CHECK(table.find("val acc") != std::string::npos);
    CHECK(table.find("stopped: cause of lost") != std::string::npos);
    CHECK(table.find("unranked, no validation_accuracy") != std::string::npos);
    CHECK(table.find("mean ± std") == std::string::npos);
    // A stopped job is no failure; a failed or unstarted one is.
    CHECK(!suite_succeeded(results));
    CHECK(suite_succeeded({results[0], results[3]}));
    const auto summary = suite_summary_json("s", {results[0], results[3]});
    CHECK(summary["status"] == "succeeded");
    CHECK(summary["jobs"][1]["status"] == "stopped");
    // Interrupted, the suite is stopped, though its jobs' endings count as a success.
    CHECK(suite_summary_json("s", {results[0], results[3]}, true)["status"] == "stopped");
  }

  TEST_CASE("a suite of regression jobs ranks by validation loss, lowest first") {
    const auto lr = [](double x, int seed) { return json{{"optimizer.lr", x}, {"seed", seed}}; };
    std::vector<suite_job_result> results{
        regression("a1", loss_kind::mse, lr(0.1, 1), 0.30, 0.9),
        regression("a2", loss_kind::mse, lr(0.1, 2), 0.50, 0.1),
        regression("b1", loss_kind::mse, lr(0.01, 1), 0.20, 0.8),
        regression("b2", loss_kind::mse, lr(0.01, 2), 0.20, 0.7),
        // An mae is no mse: it is listed, not ranked among them.
        regression("other", loss_kind::l1, {{"training.loss", "l1"}}, 0.01, 0.01),
        job("broken", run_status::failed, lr(1, 1), std::nullopt, std::nullopt, std::nullopt)};
    results[5].loss = loss_kind::mse;
    const auto by = ranking_of(results);
    CHECK(by == ranking_figure{true, true, loss_kind::mse});
    CHECK(std::string(to_string(by)) == "validation_loss");
    CHECK(rank_jobs(results) == std::vector<std::size_t>{2, 3, 0, 1, 4, 5});
    const auto board = leaderboard_json(results);
    CHECK(board["ranked_by"] == "validation_loss");
    CHECK(board["jobs"][0]["rank"] == 1);
    CHECK(board["jobs"][3]["rank"] == 4);
    CHECK(board["jobs"][4]["name"] == "other");
    CHECK(board["jobs"][4]["rank"].is_null());
    // Settings by mean validation loss: b 0.2 before a 0.4; the l1 setting unranked.
    const auto& settings = board["settings"];
    REQUIRE(settings.size() == 4);
    CHECK(settings[0]["overrides"] == json{{"optimizer.lr", 0.01}});
    CHECK(settings[0]["rank"] == 1);
    CHECK(settings[1]["rank"] == 2);
    CHECK(settings[2]["overrides"] == json{{"training.loss", "l1"}});
    CHECK(settings[2]["rank"].is_null());
    const auto table = render_leaderboard(results);
    CHECK(table.find("acc") == std::string::npos);  // no accuracy column of dashes
    CHECK(table.find("val loss") != std::string::npos);
    CHECK(table.find("unranked, trains with l1 and the suite ranks mse losses") !=
          std::string::npos);
    CHECK(table.find("0.2000 ± 0.0000") < table.find("0.4000 ± 0.1414"));
    // Without validation sets: the test loss.
    for (auto& r : results)
      r.validation_loss.reset();
    CHECK(std::string(to_string(ranking_of(results))) == "test_loss");
    CHECK(rank_jobs(results).front() == 1);  // a2's test loss 0.1
    // One classifier among them and the suite ranks by accuracy, as before: the regression jobs
    // have none.
    results.push_back(
        job("classifier", run_status::succeeded, lr(2, 1), std::nullopt, std::nullopt, 0.9));
    CHECK(ranking_of(results) == by_test);
    CHECK(rank_jobs(results).front() == 6);
  }

  TEST_CASE("run_status stopped reads back") {
    CHECK(std::string(to_string(run_status::stopped)) == "stopped");
    CHECK(parse_run_status("stopped") == run_status::stopped);
  }

  TEST_CASE("mean and sample standard deviation, by hand") {
    const auto three = mean_and_std({0.75, 0.875, 0.625});
    CHECK(three.n == 3);
    CHECK(*three.mean == 0.75);
    CHECK(*three.std == 0.125);  // sqrt((0 + 0.125^2 + 0.125^2) / 2)
    const auto eight = mean_and_std({2, 4, 4, 4, 5, 5, 7, 9});
    CHECK(*eight.mean == 5);
    CHECK(*eight.std == doctest::Approx(std::sqrt(32.0 / 7)).epsilon(1e-15));  // n - 1, not n
    const auto one = mean_and_std({0.5});
    CHECK(*one.mean == 0.5);
    CHECK(!one.std.has_value());
    CHECK(!mean_and_std({}).mean.has_value());
  }

  TEST_CASE("seed groups: settings by overrides without seed, mean ± std, ranked by the mean") {
    const auto lr = [](double x, int seed) { return json{{"optimizer.lr", x}, {"seed", seed}}; };
    const auto run = run_status::succeeded;
    std::vector<suite_job_result> results{
        job("a1", run, lr(0.1, 1), 0.75, 0.5, 0.5, 10),
        job("a2", run, lr(0.1, 2), 0.875, 0.25, 0.5, 20),
        job("a3", run, lr(0.1, 3), 0.625, 0.75, 0.5, 30),
        job("b1", run, lr(0.01, 1), 0.5, 1.0, 0.25),
        job("b2", run, lr(0.01, 2), 0.625, 1.0, 0.25),
        job("b3", run_status::failed, lr(0.01, 3), std::nullopt, std::nullopt, std::nullopt),
        job("c1", run, lr(1.0, 1), 0.5, 0.25, 0.75),
        job("c2", run, lr(1.0, 2), 1.0, 0.5, 0.25),
        job("d1", run_status::failed, {{"model", {{"hidden", {8}}}}, {"seed", 1}}, std::nullopt,
            std::nullopt, std::nullopt)};
    const auto settings = group_settings(results);
    REQUIRE(settings.size() == 4);
    CHECK(has_seed_groups(settings));
    CHECK(settings[0].overrides == json{{"optimizer.lr", 0.1}});
    CHECK(settings[0].jobs == std::vector<std::size_t>{0, 1, 2});
    CHECK(settings[1].jobs == std::vector<std::size_t>{3, 4, 5});
    CHECK(settings[1].succeeded == 2);  // b3 failed: not in the figures
    CHECK(settings[3].overrides == json{{"model", {{"hidden", {8}}}}});
    // a: 0.75, 0.875, 0.625 -> 0.75 ± 0.125; c: 0.5, 1.0 -> 0.75 ± sqrt(0.125), a tie broken by
    // the mean validation loss (c 0.375 < a 0.5); b: 0.5, 0.625 -> 0.5625 ± sqrt(0.0078125).
    CHECK(*settings[0].figures.at("validation_accuracy").std == 0.125);
    CHECK(*settings[0].figures.at("wall_s").mean == 20);
    CHECK(*settings[0].figures.at("wall_s").std == 10);
    CHECK(rank_settings(settings, by_validation) == std::vector<std::size_t>{2, 0, 1, 3});
    const auto list = settings_json(settings, results, by_validation);
    REQUIRE(list.size() == 4);
    CHECK(list[0]["rank"] == 1);
    CHECK(list[0]["jobs"] == json{"c1", "c2"});
    CHECK(stat(list[0], "validation_accuracy", "mean") == 0.75);
    CHECK(stat(list[0], "validation_accuracy", "std").get<double>() ==
          doctest::Approx(std::sqrt(0.125)).epsilon(1e-15));
    CHECK(stat(list[0], "test_accuracy", "mean") == 0.5);
    CHECK(stat(list[2], "validation_accuracy", "mean") == 0.5625);
    CHECK(stat(list[2], "validation_accuracy", "std").get<double>() ==
          doctest::Approx(std::sqrt(0.0078125)).epsilon(1e-15));
    CHECK(list[2]["succeeded"] == 2);
    CHECK(list[3]["rank"].is_null());  // nothing succeeded
    CHECK(stat(list[3], "validation_accuracy", "mean").is_null());
    CHECK(stat(list[3], "validation_accuracy", "std").is_null());
    // By test accuracy instead: a and c (0.5 each) lead, b (0.25) is third.
    CHECK(rank_settings(settings, by_test)[2] == 1);
    // The outputs carry them; the table leads with one line per setting.
    CHECK(leaderboard_json(results)["settings"] == list);
    CHECK(suite_summary_json("s", results)["settings"] == list);
    const auto table = render_leaderboard(results);
    CHECK(table.find("75.00 ± 35.36%") < table.find("75.00 ± 12.50%"));
    CHECK(table.find("56.25 ± 8.84%") != std::string::npos);
    CHECK(table.find("mean ± std") < table.find("a1"));
    // Seeds alone never make a group: every job its own setting.
    CHECK(!has_seed_groups(group_settings({results[0], results[3], results[6]})));
  }
}
