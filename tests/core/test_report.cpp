// troupe report's pieces: a run folder read back into series, events and facts, and the pages
// drawn from it (a run's, a suite's).
#include "core/errors.hpp"
#include "core/report/page_parts.hpp"
#include "core/report/report_page.hpp"
#include "core/report/run_history.hpp"
#include "core/report/series.hpp"
#include "temp_folder.hpp"
#include "text_counts.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace troupe;

TEST_SUITE("report") {
  TEST_CASE("a run folder's records fold into series and totals; bad lines are counted") {
    temp_folder f;
    f.write("job.json", R"({"name": "demo", "parallelism": {"policy": "async"}})");
    f.write(
        "metrics.jsonl",
        R"({"event":"step","step":0,"loss":2.0,"samples":8,"samples_per_s":100,"t":0.1})"
        "\n"
        R"({"event":"worker_step","step":0,"worker":1,"compute_s":0.5,"comm_s":0.25,"apply_s":0.125})"
        "\n"
        "not json\n"
        R"({"event":"step","step":1e300,"loss":1.0,"worker":-5})"
        "\n"
        R"({"event":"applied","worker":0,"clock":1,"version":1,"staleness":2})"
        "\n"
        R"({"event":"applied","worker":0,"clock":9,"version":9,"staleness":2,"count":4})"
        "\n"
        R"({"event":"eval","step":0,"t":0.2,"validation_loss":1.5,"validation_accuracy":0.5})"
        "\n"
        R"({"event":"checkpoint","step":0,"bytes":2000000,"seconds":0.1,"error":"","t":0.3})"
        "\n"
        R"({"event":"step","step":1,"loss":1.)");  // still being written
    const auto h = read_run_history(f.path.string());
    CHECK(h.name() == "demo");
    CHECK(!h.finished());
    REQUIRE(h.steps.size() == 1);  // 1e300 is no step number: that line is no record
    CHECK(h.steps[0].loss == 2.0);
    REQUIRE(h.evals.size() == 1);
    CHECK(h.evals[0].split == "validation");
    CHECK(h.evals[0].accuracy == 0.5);
    REQUIRE(h.workers.size() == 2);
    CHECK(h.workers[1].compute_s == 0.5);
    CHECK(h.staleness.at(2) == 5);  // one, then a window of four
    REQUIRE(h.events.size() == 1);
    CHECK(h.events[0].label == "checkpoint after step 0 (2.0 MB)");
    // "not json" and the step of 1e300; the unfinished last line is not counted.
    CHECK(h.skipped_lines == 2);
  }

  TEST_CASE("a lost node, the redone step, a replacement and the replicas' check are events") {
    temp_folder f;
    f.write("job.json", R"({"name": "survivor"})");
    std::string lines;
    for (const auto& record :
         {to_json(records::step{}),
          to_json(records::node_lost{
              "n2", {2, 3}, "its node's connection was lost", 7, 1.5, 1, 0, 3.0}),
          to_json(records::step_redone{7, 1, 3.1}),
          to_json(records::node_joined{"n3", {2, 3}, 9, 2500000, 2, 5.0}),
          to_json(records::replicas_checked{{0, 1, 2, 3}, 9, 2, "ab12cd34ef56ab12cd34", 5.2})})
      lines += record.dump() + "\n";
    f.write("metrics.jsonl", lines);
    const auto h = read_run_history(f.path.string());
    REQUIRE(h.events.size() == 4);
    CHECK(h.events[0].label ==
          "node n2 lost at step 7 (its node's connection was lost); worker(s) 2, 3 gone, 1 "
          "node(s) left");
    CHECK(h.events[1].label == "step 7 redone by the live workers (membership 1)");
    CHECK(h.events[2].label == "node n3 joined at step 9: worker(s) 2, 3, 2.5 MB of state");
    CHECK(h.events[3].label ==
          "replicas 0, 1, 2, 3 hold the same weights after step 9 (SHA-256 ab12cd34ef56)");
    // Drawn: a marker on the charts (its label as the line's title) and a row in the table.
    const auto page = render_run_page(h, {});
    CHECK(count_of(page, "node n2 lost at step 7") >= 2);
    CHECK(count_of(page, "node n3 joined at step 9") >= 2);
    // Each marker line carries its number, and the table numbers its rows the same way.
    CHECK(page.find("<td class=\"num\">4</td><td class=\"num\">5.20</td><td>replicas 0, 1, 2, 3") !=
          std::string::npos);
    CHECK(page.find("class=\"marker-label\"") != std::string::npos);
  }

  TEST_CASE("the run page shows the settings and the learning rate each step used") {
    temp_folder f;
    f.write("job.json", R"({"name": "lr", "optimizer": {"type": "sgd", "lr": 0.1},
                           "model": {"type": "mlp", "hidden": [32]}, "seed": 7})");
    f.write("metrics.jsonl", R"({"event":"step","step":0,"loss":2.0,"t":0.1,"lr":0.05})"
                             "\n"
                             R"({"event":"step","step":1,"loss":1.5,"t":0.2,"lr":0.1})"
                             "\n");
    const auto page = render_run_page(read_run_history(f.path.string()), {});
    CHECK(page.find("id=\"settings\"") != std::string::npos);
    CHECK(page.find("{&quot;lr&quot;:0.1,&quot;type&quot;:&quot;sgd&quot;}") != std::string::npos);
    CHECK(page.find("data-chart=\"learning_rate\"") != std::string::npos);
    CHECK(page.find("Learning rate per step") != std::string::npos);
    // A run that recorded no rate draws no chart of it.
    temp_folder g;
    g.write("metrics.jsonl", R"({"event":"step","step":0,"loss":2.0,"t":0.1})"
                             "\n");
    CHECK(render_run_page(read_run_history(g.path.string()), {}).find("learning_rate") ==
          std::string::npos);
  }

  TEST_CASE("numbers print whole where significant digits would turn to an exponent") {
    CHECK(number_text(530.2, 2) == "530");
    CHECK(number_text(74458.3) == "74458");
    CHECK(number_text(12.345, 2) == "12");
    CHECK(number_text(0.012345, 2) == "0.012");
    CHECK(number_text(1.5) == "1.5");
    CHECK(number_text(NAN) == "-");
  }

  TEST_CASE("a follower reads only what was appended, and whole lines only") {
    temp_folder f;
    f.write("metrics.jsonl", R"({"event":"step","step":0,"loss":2.0,"t":0.1})"
                             "\n"
                             R"({"event":"step","st)");
    run_follower follower(f.path.string());
    CHECK(follower.refresh().steps.size() == 1);
    f.append("metrics.jsonl", R"(ep":1,"loss":1.0,"t":0.2})"
                              "\n");
    const auto& h = follower.refresh();
    REQUIRE(h.steps.size() == 2);
    CHECK(h.steps[1].loss == 1.0);
    CHECK(h.skipped_lines == 0);
    f.write("metrics.jsonl", R"({"event":"step","step":0,"loss":3.0,"t":0.1})"
                             "\n");  // rewritten, shorter: read again from the start
    CHECK(follower.refresh().steps.size() == 1);
    CHECK(follower.refresh().steps[0].loss == 3.0);
    // Found probing as a hostile user: a run with --force (another file, longer than what was
    // read) or a file moved over it kept the old run's records beside the new one's.
    std::string longer;
    for (int step = 0; step < 5; ++step)
      longer +=
          R"({"event":"step","step":)" + std::to_string(step) + R"(,"loss":0.5,"t":0.3})" + "\n";
    f.write("metrics.jsonl.new", longer);
    std::filesystem::rename(f.path / "metrics.jsonl.new", f.path / "metrics.jsonl");
    const auto& moved = follower.refresh();
    REQUIRE(moved.steps.size() == 5);
    CHECK(moved.steps[0].loss == 0.5);
    CHECK(moved.skipped_lines == 0);
    // The same file, rewritten in place with other first bytes and longer than before.
    std::string other = longer;
    other.replace(other.find("0.5"), 3, "0.7");
    f.write("metrics.jsonl", other + R"({"event":"step","step":5,"loss":0.25,"t":0.4})" + "\n");
    const auto& rewritten = follower.refresh();
    REQUIRE(rewritten.steps.size() == 6);
    CHECK(rewritten.steps[0].loss == 0.7);
    CHECK(follower.refresh().steps.size() == 6);  // and followed from there, not read again
  }

  TEST_CASE("summary.json's worker totals win over the records'") {
    temp_folder f;
    f.write("metrics.jsonl",
            R"({"event":"worker_step","step":0,"worker":0,"compute_s":1,"comm_s":1,"apply_s":1})"
            "\n");
    f.write("summary.json",
            R"({"status":"succeeded","workers":[{"rank":0,"compute_s":7,"wait_s":2}]})");
    const auto h = read_run_history(f.path.string());
    CHECK(h.finished());
    CHECK(h.workers[0].compute_s == 7);
    CHECK(h.workers[0].wait_s == 2);
  }

  TEST_CASE("a folder with metrics only draws; a summary that is not an object is refused") {
    temp_folder f;
    f.write("metrics.jsonl", R"({"event":"step","step":0,"loss":2.0,"t":0.1})"
                             "\n");
    CHECK(render_run_page(read_run_history(f.path.string()), {}).find("loss_by_step") !=
          std::string::npos);
    f.write("summary.json", "7");
    CHECK_THROWS_WITH_AS(read_run_history(f.path.string()),
                         doctest::Contains("summary.json: not a JSON object"), data_error);
  }

  TEST_CASE("folders that are not runs are refused with their name") {
    temp_folder f;
    CHECK_THROWS_WITH_AS(read_run_history((f.path / "nope").string()),
                         doctest::Contains("not a folder"), data_error);
    CHECK_THROWS_WITH_AS(read_run_history(f.path.string()),
                         doctest::Contains("holds neither metrics.jsonl nor summary.json"),
                         data_error);
    f.write("summary.json", "{\"status\": ");
    CHECK_THROWS_WITH_AS(read_run_history(f.path.string()),
                         doctest::Contains("summary.json: not JSON"), data_error);
  }

  TEST_CASE("a run page holds its charts, facts and job, and a script only when live") {
    temp_folder f;
    f.write("job.json", R"({"name": "<b>demo</b>"})");
    std::string metrics;
    for (int s = 0; s < 3000; ++s)
      metrics += nlohmann::json{{"event", "step"},
                                {"step", s},
                                {"loss", 1.0 / (s + 1)},
                                {"t", s * 0.01},
                                {"samples_per_s", 1000.0}}
                     .dump() +
                 "\n";
    f.write("metrics.jsonl", metrics);
    const auto h = read_run_history(f.path.string());
    const auto page = render_run_page(h, {});
    CHECK(page.find("<script") == std::string::npos);
    CHECK(page.find("&lt;b&gt;demo&lt;/b&gt;") != std::string::npos);
    CHECK(page.find("data-chart=\"loss_by_step\"") != std::string::npos);
    CHECK(page.find("data-chart=\"throughput\"") != std::string::npos);
    CHECK(page.find("data-chart=\"accuracy_by_step\"") == std::string::npos);  // no evaluations
    // 3,000 steps thinned to the chart limit, raw and smoothed, by step and by time.
    CHECK(count_of(page, "data-points=\"" + std::to_string(max_chart_points) + "\"") == 6);
    CHECK(render_run_page(h, {true}).find("fetch('version'") != std::string::npos);
  }

  TEST_CASE("the facts name the weights the test figure is of, the best and an early stop") {
    temp_folder f;
    const auto eval = [](int step, const char* split, double accuracy) {
      return nlohmann::json{{"event", "eval"},
                            {"step", step},
                            {split + std::string("_loss"), 1.0},
                            {split + std::string("_accuracy"), accuracy},
                            {"t", step * 0.1}}
                 .dump() +
             "\n";
    };
    f.write("metrics.jsonl",
            eval(9, "validation", 0.5) + eval(19, "validation", 0.4) + eval(9, "test", 0.45));
    f.write("summary.json", R"({"status": "succeeded", "steps": 20, "validation_loss": 1.0,
        "validation_accuracy": 0.4, "test_loss": 1.0, "test_accuracy": 0.45,
        "best": {"step": 9, "metric": "validation_accuracy", "value": 0.5},
        "stopped_early_at": 19, "wall_s": 2.0})");
    const auto page = render_run_page(read_run_history(f.path.string()), {});
    CHECK(page.find("test accuracy (best weights)") != std::string::npos);
    CHECK(page.find("validation accuracy 50.00% after step 9") != std::string::npos);
    CHECK(page.find("after step 19's evaluation") != std::string::npos);
    // The accuracy chart keeps its splits apart: 2 validation points, 1 test point.
    CHECK(page.find("data-series=\"validation accuracy\" data-points=\"2\"") != std::string::npos);
    CHECK(page.find("data-series=\"test accuracy\" data-points=\"1\"") != std::string::npos);
  }

  TEST_CASE("under mse the run page draws no accuracy and states the test mse") {
    temp_folder f;
    f.write("metrics.jsonl",
            nlohmann::json{
                {"event", "eval"}, {"step", 4}, {"test_loss", 0.3}, {"test_mse", 0.3}, {"t", 1.0}}
                    .dump() +
                "\n");
    f.write("summary.json", R"({"status": "succeeded", "test_loss": 0.3, "test_mse": 0.3})");
    const auto page = render_run_page(read_run_history(f.path.string()), {});
    CHECK(page.find("data-chart=\"accuracy_by_step\"") == std::string::npos);
    CHECK(page.find("test mse") != std::string::npos);
    CHECK(page.find("test accuracy") == std::string::npos);
  }

  TEST_CASE("a suite draws each job's validation accuracy, never its test figure on the line") {
    const auto job = [](const char* name, bool validated) {
      run_history h;
      for (int step : {9, 19})
        h.evals.push_back({step, 0.0, validated ? "validation" : "test", 1.0, 0.5});
      if (validated)
        h.evals.push_back({19, 0.0, "test", 1.0, 0.9});  // the one test evaluation at the end
      return suite_job_history{name, h};
    };
    suite_history s;
    s.name = "s";
    s.jobs = {job("a", true), job("b", true)};
    auto page = render_suite_page(s, {});
    CHECK(page.find("Validation accuracy per evaluation, every job") != std::string::npos);
    CHECK(page.find("data-series=\"a\" data-points=\"2\"") != std::string::npos);
    // Jobs of both kinds: each line names its split.
    s.jobs = {job("a", true), job("c", false)};
    page = render_suite_page(s, {});
    CHECK(page.find("data-series=\"a (validation)\" data-points=\"2\"") != std::string::npos);
    CHECK(page.find("data-series=\"c (test)\" data-points=\"2\"") != std::string::npos);
  }

  TEST_CASE("a suite of regression jobs shows and draws losses, no accuracy") {
    const auto job = [](const char* name, double loss) {
      run_history h;
      for (int step : {9, 19}) {
        eval_row e{step, 0.0, "validation", loss, loss};
        e.has_accuracy = false;  // the figure is an mse
        h.evals.push_back(e);
      }
      return suite_job_history{name, h};
    };
    suite_history s;
    s.name = "s";
    s.jobs = {job("a", 0.25), job("b", 0.5)};
    s.leaderboard = {
        {"ranked_by", "validation_loss"},
        {"jobs",
         {{{"name", "a"}, {"rank", 1}, {"validation_loss", 0.25}, {"test_loss", 0.3}},
          {{"name", "b"}, {"rank", 2}, {"validation_loss", 0.5}, {"test_loss", 0.6}}}}};
    const auto page = render_suite_page(s, {});
    CHECK(page.find("<th>validation loss</th><th>test loss</th>") != std::string::npos);
    CHECK(page.find("acc.") == std::string::npos);
    CHECK(page.find("50.00%") == std::string::npos);  // no mse shown as a percentage
    CHECK(page.find("Validation loss per evaluation, every job") != std::string::npos);
    CHECK(page.find("data-series=\"a\" data-points=\"2\"") != std::string::npos);
  }
}
