// What an hour of a fast run leaves in metrics.jsonl under the metrics budget, and how long its
// report takes to draw: simulates --seconds of a run doing --steps-per-s steps with --workers
// workers (a virtual clock: the budget sees the run's time, not the benchmark's), writes the
// records through the tracker's record windows and budget into DIR/metrics.jsonl, then reads
// the folder back and draws report.html, timing both. The reference is the same run without
// the budget (every record written): its size is measured on the first 10,000 steps and scaled.
//   report_hour DIR [--seconds 3600] [--steps-per-s 1000] [--workers 2]
#include "core/metrics/jsonl_writer.hpp"
#include "core/metrics/metrics_budget.hpp"
#include "core/metrics/record_windows.hpp"
#include "core/report/report_page.hpp"
#include "core/report/run_history.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>

using namespace troupe;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// DIR is replaced: refused unless it is new, empty, or holds only what this benchmark
// writes (a mistyped DIR must not be a folder of someone's files removed).
std::string not_ours(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(dir, ec))
    return "";
  if (!fs::is_directory(dir, ec))
    return "not a folder";
  for (const auto& entry : fs::directory_iterator(dir)) {
    const auto name = entry.path().filename().string();
    if (name != "job.json" && name != "metrics.jsonl" && name != "summary.json" &&
        name != "report.html")
      return "holds " + name + ", which this benchmark does not write: give a new or empty folder";
  }
  return "";
}

void simulate(const std::string& dir, double seconds, double steps_per_s, int64_t workers) {
  namespace fs = std::filesystem;
  fs::remove_all(dir);  // one this benchmark wrote (checked by main), or nothing
  fs::create_directories(dir);
  std::ofstream(fs::path(dir) / "job.json") << R"({"name": "one_hour"})";
  const auto steps = static_cast<int64_t>(seconds * steps_per_s);
  const int64_t batch = 64;
  std::mt19937 rng(1);
  std::normal_distribution<double> noise(0, 0.05);

  double unthinned_bytes = 0;  // of the first steps, every record as it comes
  const int64_t sampled_steps = std::min<int64_t>(steps, 10'000);
  const auto t0 = std::chrono::steady_clock::now();
  {
    jsonl_writer metrics((fs::path(dir) / "metrics.jsonl").string());
    metrics_budget budget;
    record_windows windows([&](const nlohmann::json& j) { metrics.write(j); });
    const double step_s = 1.0 / steps_per_s;
    for (int64_t s = 0; s < steps; ++s) {
      const double t = static_cast<double>(s + 1) * step_s;
      const double loss = 0.3 + 2.0 * std::exp(-t / 300) + noise(rng);
      records::step step{s, s / 937, loss, batch, batch / step_s, step_s, 1e-4, t, 0.02};
      windows.add(step);
      std::vector<records::worker_step> parts;
      for (int64_t w = 0; w < workers; ++w) {
        parts.push_back({s, w, step_s * 0.6, step_s * 0.3, step_s * 0.05});
        windows.add(parts.back());
      }
      if (s < sampled_steps) {
        unthinned_bytes += static_cast<double>(to_json(step).dump().size() + 1);
        for (const auto& p : parts)
          unthinned_bytes += static_cast<double>(to_json(p).dump().size() + 1);
      }
      if (s % 3000 == 2999)  // an evaluation every 3 s of run
        metrics.write(
            to_json(records::eval{s, s / 937, "test", loss, 0.9 - loss / 10, 10000, 0.05, t, ""}));
      windows.set_stride(budget.stride_after(metrics.bytes_written(), t));
    }
    windows.flush();
  }
  const double write_s = seconds_since(t0);
  std::ofstream(fs::path(dir) / "summary.json") << R"({"status": "succeeded"})";

  const auto t1 = std::chrono::steady_clock::now();
  const auto history = read_run_history(dir);
  const double read_s = seconds_since(t1);
  const auto t2 = std::chrono::steady_clock::now();
  const auto page = render_run_page(history, {});
  const double draw_s = seconds_since(t2);
  std::ofstream(fs::path(dir) / "report.html") << page;

  const double bytes = static_cast<double>(fs::file_size(fs::path(dir) / "metrics.jsonl"));
  const double reference =
      unthinned_bytes * static_cast<double>(steps) / static_cast<double>(sampled_steps);
  nlohmann::json out = {{"benchmark", "report_hour"},
                        {"simulated_s", seconds},
                        {"steps", steps},
                        {"workers", workers},
                        {"metrics_mb", bytes / 1e6},
                        {"unthinned_metrics_mb", reference / 1e6},
                        {"ratio_to_unthinned", bytes / reference},
                        {"budget_mb", metrics_budget().allowance(seconds) / 1e6},
                        {"step_records", history.steps.size()},
                        {"report_read_s", read_s},
                        {"report_draw_s", draw_s},
                        {"report_html_kb", static_cast<double>(page.size()) / 1e3},
                        {"simulate_and_write_s", write_s}};
  std::cout << out.dump(2) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"metrics.jsonl of an hour-long run, and its report's time to draw"};
  std::string dir;
  double seconds = 3600;
  double steps_per_s = 1000;
  int64_t workers = 2;
  app.add_option("dir", dir, "Folder to write the run into (replaced)")->required();
  app.add_option("--seconds", seconds, "Simulated run time")->check(CLI::Range(1.0, 7 * 86400.0));
  app.add_option("--steps-per-s", steps_per_s, "Simulated step rate")->check(CLI::Range(0.01, 1e5));
  app.add_option("--workers", workers, "Workers writing a record per step each")
      ->check(CLI::Range(1, 256));
  CLI11_PARSE(app, argc, argv);
  if (const double steps = seconds * steps_per_s; steps < 1 || steps > 1e9) {
    std::cerr << "report_hour_bench: --seconds times --steps-per-s must make 1 to 10^9 steps\n";
    return 2;
  }
  try {
    if (const auto why = not_ours(dir); !why.empty()) {
      std::cerr << "report_hour_bench: " << dir << ": " << why << "\n";
      return 2;
    }
    simulate(dir, seconds, steps_per_s, workers);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "report_hour_bench: " << e.what() << "\n";
    return 1;
  }
}
