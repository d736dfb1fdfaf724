// What a person reads: the progress line (its rate over a window, its fit to the terminal),
// "did you mean" for a misspelt key, the preprocessing a job states, a suite's live table.
#include "core/config/near_miss.hpp"
#include "core/config/parse_job.hpp"
#include "core/data/preprocessing.hpp"
#include "core/errors.hpp"
#include "core/suite/live_table.hpp"
#include "core/train/progress_line.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <string>

namespace troupe {
namespace {

progress_update update_at(int64_t step) {
  progress_update p;
  p.step = step;
  p.total_steps = 936;
  p.epoch = 0;
  p.loss = 0.61234;
  p.elapsed_s = 12.5;
  return p;
}

TEST_SUITE("user_facing") {
  TEST_CASE("samples/s is the rate over the last second, not one step's") {
    rate_window rate(1.0);
    CHECK(!rate.add(0.0, 0));  // one point spans no time
    // Steps of 128 samples every 10 ms: 12,800 samples/s...
    std::optional<double> r;
    double t = 0;
    int64_t samples = 0;
    for (int i = 0; i < 300; ++i) {
      t += 0.01;
      samples += 128;
      r = rate.add(t, samples);
    }
    REQUIRE(r);
    CHECK(*r == doctest::Approx(12800).epsilon(0.01));
    // ... then one step finishes only 0.1 ms after the last: its own rate would be 1,280,000.
    t += 0.0001;
    samples += 128;
    r = rate.add(t, samples);
    CHECK(*r == doctest::Approx(12800).epsilon(0.03));
    // A count that goes back (a resumed run) starts over rather than showing a negative rate.
    CHECK(!rate.add(t + 1, 5));
    CHECK(*rate.add(t + 2, 1005) == doctest::Approx(1000));
  }

  TEST_CASE("the width: the terminal's, else $COLUMNS, else 80") {
    CHECK(choose_width(120, "40") == 120);
    CHECK(choose_width(0, "40") == 40);
    CHECK(choose_width(0, nullptr) == 80);
    CHECK(choose_width(0, "wide") == 80);
    CHECK(choose_width(0, "-3") == 80);
  }

  TEST_CASE("the progress line fits the width, dropping the least useful parts first") {
    auto p = update_at(40);
    p.accuracy = 0.841;
    p.validation = true;
    const auto full = progress_line(p, 41234.4, 0);
    CHECK(full == "epoch 1 step 40/936 loss 0.6123 41234 samples/s ETA 0:04:40 val acc 84.10%");
    CHECK(progress_line(p, 41234.4, 200) == full);
    for (std::size_t width : {80, 60, 50, 40, 20, 2}) {
      const auto line = progress_line(p, 41234.4, width);
      CHECK_MESSAGE(line.size() <= width - 1, width, ": ", line);
      if (width >= 20)  // what is kept longest: the step
        CHECK(line.find("step 40/936") != std::string::npos);
    }
    CHECK(progress_line(p, 41234.4, 60) ==
          "step 40/936 loss 0.6123 41234 samples/s val acc 84.10%");
    CHECK(progress_line(p, 41234.4, 40) == "step 40/936 loss 0.6123 val acc 84.10%");
  }

  TEST_CASE("edit distance and the nearest known key") {
    CHECK(edit_distance("", "abc") == 3);
    CHECK(edit_distance("momentun", "momentum") == 1);
    CHECK(edit_distance("kitten", "sitting") == 3);
    CHECK(edit_distance("nmae", "name") == 1);
    const std::vector<std::string> known{"type", "lr", "momentum", "weight_decay", "nesterov"};
    CHECK(nearest_key("momentun", known) == "momentum");
    CHECK(nearest_key("lrr", known) == "lr");
    CHECK(nearest_key("weightdecay", known) == "weight_decay");
    CHECK(!nearest_key("colour", known));
  }

  TEST_CASE("an unknown key in a job says what was probably meant") {
    try {
      parse_job(nlohmann::json::parse(R"({"optimizer": {"momentun": 0.9}})"));
      FAIL("no problem reported");
    } catch (const job_error& e) {
      REQUIRE(e.problems().size() == 1);
      CHECK(e.problems()[0].find("/optimizer/momentun: unknown key (did you mean \"momentum\"? "
                                 "known: ") == 0);
    }
  }

  TEST_CASE("the job states its preprocessing; it reads back, and cannot be changed") {
    const auto resolved = to_json(job_config{});  // Fashion-MNIST
    const auto& pre = resolved["data"]["preprocessing"];
    CHECK(pre["formula"] == "(x/255 - 0.2860)/0.3530");
    CHECK(pre["mean"] == 0.2860);
    CHECK(pre["std"] == 0.3530);
    CHECK(pre["scale"] == 1.0 / 255.0);
    auto j = nlohmann::json::parse(resolved.dump());
    CHECK_NOTHROW(parse_job(j));
    j["data"]["preprocessing"]["mean"] = 0.5;
    try {
      parse_job(j);
      FAIL("a changed preprocessing was accepted");
    } catch (const job_error& e) {
      REQUIRE(e.problems().size() == 1);
      CHECK(e.problems()[0].find("/data/preprocessing: states what troupe does") == 0);
    }
    CHECK(preprocessing_json(data_kind::synthetic).is_null());
    CHECK(
        !to_json(parse_job({{"data", {{"type", "synthetic"}}}}))["data"].contains("preprocessing"));
  }

  TEST_CASE("a suite's live table from its jobs' metrics records") {
    job_row a;
    a.name = "plain-0";
    a.total_steps = 60;
    a.status = "running";
    a.feed(R"({"event":"step","step":0,"loss":2.5})"
           "\n"
           R"({"event":"step","step":19,"lo)");
    CHECK(a.steps == 1);  // the second record is not whole yet
    a.feed(R"(ss":0.75})"
           "\n"
           R"({"event":"eval","step":19,"test_loss":0.8,"test_accuracy":0.851})"
           "\n");
    CHECK(a.steps == 20);
    CHECK(*a.loss == 0.75);
    CHECK(*a.accuracy == 0.851);
    CHECK(row_line(a) == "  plain-0: running step 20/60 loss 0.7500 test acc 85.10%");
    job_row b;
    b.name = "wide-1";
    const auto lines = render_table({a, b}, 0);
    REQUIRE(lines.size() == 3);
    CHECK(lines[0] == "job      status   step   loss    accuracy");
    CHECK(lines[1] == "plain-0  running  20/60  0.7500  85.10% test");
    CHECK(lines[2] == "wide-1   queued   -      -       -");
    for (const auto& line : render_table({a, b}, 20))
      CHECK(line.size() <= 19);
  }
}

}  // namespace
}  // namespace troupe
