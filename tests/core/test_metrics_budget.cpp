// The metrics budget that keeps a long run's metrics.jsonl small enough to read back: record
// windows, the stride the budget picks, and a tracker that writes through both.
#include "core/metrics/metrics_budget.hpp"
#include "core/metrics/record_windows.hpp"
#include "core/train/run_tracker.hpp"
#include "temp_folder.hpp"
#include "text_counts.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace troupe;
namespace fs = std::filesystem;

TEST_SUITE("metrics_budget") {
  TEST_CASE("record windows sum what they stand for; stride 1 writes records as they are") {
    std::vector<nlohmann::json> out;
    record_windows w([&](const nlohmann::json& j) { out.push_back(j); });
    w.add(records::step{0, 0, 2.0, 4, 40, 0.1, 0.01, 0.1, 0.5});
    REQUIRE(out.size() == 1);
    CHECK(out[0] == to_json(records::step{0, 0, 2.0, 4, 40, 0.1, 0.01, 0.1, 0.5}));
    w.set_stride(3);
    for (int64_t s = 1; s <= 4; ++s) {
      w.add(records::step{s, 0, double(s), 4 * s, 0, 0.5, 0.01, 0.1 * s, 0.5});
      w.add(records::worker_step{s, 0, 1.0, 0.5, 0.25});
      w.add(records::applied{0, s, s, s % 2});
      w.add(records::waited{0, s, 0.125});
    }
    // Steps 1..3 form a window; step 4 waits for its window to fill.
    nlohmann::json step_window;
    for (const auto& j : out)
      if (j["event"] == "step" && j.contains("steps"))
        step_window = j;
    REQUIRE(!step_window.is_null());
    CHECK(step_window["steps"] == 3);
    CHECK(step_window["step"] == 3);
    CHECK(step_window["samples"] == 4 + 8 + 12);
    CHECK(step_window["loss"].get<double>() == doctest::Approx((4 * 1 + 8 * 2 + 12 * 3) / 24.0));
    CHECK(step_window["samples_per_s"].get<double>() == doctest::Approx(24 / 1.5));
    w.flush();
    int64_t steps = 0;
    int64_t pushes = 0;
    int64_t waits = 0;
    double compute = 0;
    double waited = 0;
    for (const auto& j : out) {
      if (j["event"] == "step")
        steps += j.value("steps", 1);
      if (j["event"] == "worker_step")
        compute += j["compute_s"].get<double>();
      if (j["event"] == "applied")
        pushes += j.value("count", 1);
      if (j["event"] == "waited") {
        waits += j.value("count", 1);
        waited += j["wait_s"].get<double>();
      }
    }
    CHECK(steps == 5);
    CHECK(compute == 4.0);
    CHECK(pushes == 4);
    CHECK(waits == 4);
    CHECK(waited == 0.5);
  }

  TEST_CASE("the metrics budget doubles the stride only while over it and growing too fast") {
    metrics_budget b(1000, 100, 5);
    CHECK(b.stride_after(900, 10) == 1);   // within 1000 + 100 * 10
    CHECK(b.stride_after(3000, 10) == 2);  // over, at 300 B/s
    CHECK(b.stride_after(3200, 12) == 2);  // too soon to judge the new stride
    CHECK(b.stride_after(4400, 16) == 4);  // 200 B/s over 6 s: still too fast
    CHECK(b.stride_after(4800, 30) == 4);  // 28 B/s: over the allowance (3,000) no longer
    CHECK(b.stride_after(5200, 40) == 4);  // over, but 33 B/s since it became 4: catching up
    CHECK(b.stride_after(9000, 41) == 8);  // 184 B/s since then: too fast again
  }

  TEST_CASE("a tracker on a tiny budget keeps metrics.jsonl small and its totals whole") {
    temp_folder f;
    const auto file = (f.path / "metrics.jsonl").string();
    {
      jsonl_writer metrics(file);
      tracker_options o;
      o.budget = metrics_budget(20'000, 0, 0);
      run_tracker tracker(2, step_rules(20'000, 20'000, 0), &metrics, o);
      for (int64_t s = 0; s < 20'000; ++s) {
        tracker.on_step_complete(s, {{0, 1.0, 4}, {1, 3.0, 4}}, 0.0);
        tracker.on_worker_step(0, s, 0.001, 0.0, 0.0);
        tracker.on_worker_step(1, s, 0.002, 0.0, 0.0);
      }
      tracker.flush_records();
    }
    CHECK(fs::file_size(file) < 60'000);  // unthinned: about 9 MB
    int64_t steps = 0;
    int64_t samples = 0;
    double compute = 0;
    for (const auto& j : lines_of(file)) {
      if (j["event"] == "step") {
        steps += j.value("steps", 1);
        samples += j["samples"].get<int64_t>();
        CHECK(j["loss"].get<double>() == doctest::Approx(2.0));
      } else if (j["event"] == "worker_step") {
        compute += j["compute_s"].get<double>();
      }
    }
    CHECK(steps == 20'000);
    CHECK(samples == 20'000 * 8);
    CHECK(compute == doctest::Approx(20'000 * 0.003));
  }
}