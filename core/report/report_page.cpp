#include "core/report/report_page.hpp"

#include "core/report/page_parts.hpp"

#include "core/report/series.hpp"
#include "core/report/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

namespace troupe {
namespace {
// A page lists at most this many events (and marks as many on its charts): a run checkpointing
// every step has one per step, and 500,000 of them made a page of 426 MB.
constexpr std::size_t max_events_shown = 1000;

std::vector<chart_marker> event_markers(const run_history& h) {
  std::vector<chart_marker> markers;
  for (std::size_t i = 0; i < h.events.size() && i < max_events_shown; ++i)
    markers.push_back({h.events[i].t, h.events[i].label});
  return markers;
}

// Raw values (faint, thinned) under their smoothed line.
void add_noisy(line_chart& c, const std::string& name, const std::vector<chart_point>& raw,
               const char* color) {
  c.series.push_back({name + " (raw)", thinned(raw, max_chart_points), color, true, false});
  c.series.push_back({name, thinned(smoothed(raw), max_chart_points), color, false, false});
}

// Evaluation series, one per split ("test", "validation"), of loss or accuracy (in percent).
void add_evals(line_chart& c, const run_history& h, bool by_time, bool accuracy) {
  std::map<std::string, std::vector<chart_point>> by_split;
  for (const auto& e : h.evals)
    if (!accuracy || e.has_accuracy)
      by_split[e.split].push_back(
          {by_time ? e.t : static_cast<double>(e.step), accuracy ? e.accuracy * 100 : e.loss});
  std::size_t k = 1;
  for (auto& [split, points] : by_split)
    c.series.push_back({split + (accuracy ? " accuracy" : " loss"),
                        thinned(points, max_chart_points), palette_color(k++), false, true});
}

std::string learning_charts(const run_history& h) {
  std::string out;
  for (bool by_time : {false, true}) {
    const std::string suffix = by_time ? "_by_time" : "_by_step";
    const std::string x_label = by_time ? "seconds since the start" : "step";
    line_chart loss{"loss" + suffix,
                    by_time ? "Loss over time" : "Loss per step",
                    x_label,
                    "loss",
                    {},
                    {},
                    true};
    add_noisy(loss, "train loss", step_series(h, by_time, &step_row::loss), palette_color(0));
    add_evals(loss, h, by_time, false);
    if (by_time)
      loss.markers = event_markers(h);
    out += render_svg(loss);
    if (std::none_of(h.evals.begin(), h.evals.end(),
                     [](const eval_row& e) { return e.has_accuracy; }))
      continue;
    line_chart accuracy{"accuracy" + suffix,
                        by_time ? "Accuracy over time" : "Accuracy per evaluation",
                        x_label,
                        "accuracy (%)",
                        {},
                        {},
                        false};
    add_evals(accuracy, h, by_time, true);
    if (by_time)
      accuracy.markers = event_markers(h);
    out += render_svg(accuracy);
  }
  return out;
}

// The learning rate each step's update used (a schedule's warm-up and decay), when recorded.
std::string lr_chart(const run_history& h) {
  std::vector<chart_point> points;
  for (const auto& s : h.steps)
    if (s.lr > 0)
      points.push_back({static_cast<double>(s.step), s.lr});
  if (points.empty())
    return {};
  line_chart c{"learning_rate", "Learning rate per step", "step", "learning rate", {}, {}, true};
  c.series.push_back({"lr", thinned(points, max_chart_points), palette_color(3), false, false});
  return render_svg(c);
}

// The settings a reader compares runs by, each section of the resolved job on one line.
std::string settings_table(const run_history& h) {
  if (!h.job.is_object())
    return {};
  std::string out = "<h2>Settings</h2><table id=\"settings\">";
  for (const char* key : {"model", "optimizer", "training", "parallelism", "data", "seed"})
    if (h.job.contains(key))
      out += row(key, "<code>" + echo(h.job[key].dump(), 600) + "</code>");
  return out + "</table>";
}

// Stacked ensembles: each member's accuracy per evaluation, beside the ensemble's.
std::string member_chart(const run_history& h) {
  if (h.member_evals.empty())
    return {};
  std::map<int64_t, std::vector<chart_point>> by_member;
  for (const auto& e : h.member_evals)
    by_member[e.member].push_back({static_cast<double>(e.step), e.accuracy * 100});
  line_chart c{
      "member_accuracy", "Each ensemble member's accuracy", "step", "accuracy (%)", {}, {}, false};
  std::size_t k = 0;
  for (auto& [member, points] : by_member)
    c.series.push_back({fmt::format("member {}", member), thinned(points, max_chart_points),
                        palette_color(k++), false, true});
  return render_svg(c);
}

std::string throughput_chart(const run_history& h) {
  line_chart c{"throughput", "Throughput", "seconds since the start", "samples/s", {}, {}, true};
  add_noisy(c, "samples/s", step_series(h, true, &step_row::samples_per_s), palette_color(2));
  c.markers = event_markers(h);
  return render_svg(c);
}

std::string worker_chart(const run_history& h) {
  bar_chart c{"worker_time", "Where each worker's time went", "s", {}};
  for (const auto& w : h.workers)
    c.rows.push_back({fmt::format("worker {}", w.worker),
                      {{"compute", w.compute_s},
                       {"communication", w.comm_s},
                       {"apply", w.apply_s},
                       {"data wait", w.data_wait_s},
                       {"waiting", w.wait_s + w.idle_s}}});
  return render_svg(c) +
         "<p class=\"note\">compute: forward and backward; communication: sending gradients and "
         "waiting for the combined one (sync) or for fresh weights (async); apply: the optimizer "
         "step; data wait: waiting for the batch's rows (the loader behind); waiting: held back by "
         "the staleness bound (async) or idle in the pipeline's "
         "bubble.</p>";
}

std::string async_charts(const run_history& h) {
  if (h.staleness.empty())
    return {};
  bar_chart hist{"staleness", "Staleness of applied gradients", "gradients", {}};
  for (const auto& [staleness, count] : h.staleness)
    hist.rows.push_back(
        {fmt::format("staleness {}", staleness), {{"gradients", static_cast<double>(count)}}});
  bar_chart waits{"waits", "Time held back by the staleness bound", "s", {}};
  for (const auto& w : h.workers)
    waits.rows.push_back({fmt::format("worker {}", w.worker), {{"waiting", w.wait_s}}});
  return "<h2>Asynchronous updates</h2>" + render_svg(hist) + render_svg(waits);
}

std::string pipeline_charts(const run_history& h) {
  if (h.stages.empty())
    return {};
  bar_chart c{"stages", "Pipeline stages: busy and idle", "s", {}};
  double busy = 0;
  double idle = 0;
  for (const auto& s : h.stages) {
    c.rows.push_back({fmt::format("pipeline {} stage {}", s.pipeline, s.stage),
                      {{"busy", s.busy_s}, {"idle", s.idle_s}}});
    busy += s.busy_s;
    idle += s.idle_s;
  }
  std::string out = "<h2>Pipeline</h2>" + render_svg(c);
  const double measured = busy + idle > 0 ? idle / (busy + idle) : NAN;
  std::string predicted = "-";
  if (h.summary.is_object() && h.summary.contains("predicted_bubble_fraction") &&
      h.summary["predicted_bubble_fraction"].is_number())
    predicted = fmt::format("{:.1f}%", h.summary["predicted_bubble_fraction"].get<double>() * 100);
  out += fmt::format(
      "<p id=\"bubble\">Bubble: measured {:.1f}% of the stages' time (idle over busy + idle), "
      "predicted {} for this schedule with equal stages.</p>",
      measured * 100, predicted);
  return out;
}

std::string events_table(const run_history& h) {
  if (h.events.empty())
    return {};
  // Numbered as the charts' marker lines are.
  std::string out =
      "<h2>Events</h2><table id=\"events\"><tr><th>#</th><th>time (s)</th><th>event</th></tr>";
  const auto shown = std::min(h.events.size(), max_events_shown);
  for (std::size_t i = 0; i < shown; ++i)
    out += fmt::format("<tr><td class=\"num\">{}</td><td class=\"num\">{:.2f}</td><td>{}</td></tr>",
                       i + 1, h.events[i].t, echo(h.events[i].label));
  if (shown < h.events.size())
    out += fmt::format(
        "<tr><td></td><td></td><td>… and {} more events (metrics.jsonl holds every "
        "one)</td></tr>",
        h.events.size() - shown);
  return out + "</table>";
}

// The final evaluation class by class: each true class's accuracy, and (up to 30 classes, where
// it still fits a page) the confusion matrix, each cell shaded by its share of the row.
std::string classes_section(const run_history& h) {
  if (!h.confusion)
    return {};
  const auto& c = *h.confusion;
  const auto accuracy = records::per_class_accuracy(c);
  std::string out = fmt::format(
      "<h2>Classes</h2><p>The {} set's evaluation after step {}{}, class by class.</p>"
      "<table id=\"per_class\"><tr><th>class</th><th>rows</th><th>accuracy</th></tr>",
      echo(c.split), c.step, c.weights.empty() ? "" : " (" + echo(c.weights) + " weights)");
  const auto k = static_cast<std::size_t>(c.classes);
  const auto rows = records::class_rows(c);
  for (std::size_t truth = 0; truth < k; ++truth) {
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        truth, rows[truth], accuracy[truth] ? fmt::format("{:.2f}%", *accuracy[truth] * 100) : "-");
  }
  out += "</table>";
  if (c.classes > 30)
    return out;
  out += "<table id=\"confusion\"><tr><th>true \\ predicted</th>";
  for (std::size_t p = 0; p < k; ++p)
    out += fmt::format("<th>{}</th>", p);
  out += "</tr>";
  for (std::size_t truth = 0; truth < k; ++truth) {
    out += fmt::format("<tr><th>{}</th>", truth);
    for (std::size_t p = 0; p < k; ++p) {
      const auto n = c.counts[truth * k + p];
      const double share =
          rows[truth] > 0 ? static_cast<double>(n) / static_cast<double>(rows[truth]) : 0.0;
      out += fmt::format("<td class=\"num\" style=\"background:rgba({},{:.3f})\">{}</td>",
                         p == truth ? "40,140,60" : "200,60,40", share, n);
    }
    out += "</tr>";
  }
  return out + "</table>";
}

// The evaluations' figures as summary.json names them by metric (accuracy, mse or mae); with a
// validation set, the test set's one evaluation names the weights it was of.
std::string evaluation_facts(const nlohmann::json& s) {
  const bool validated = s.contains("validation_loss");
  const bool best = s.contains("best") && s["best"].is_object();
  std::string out;
  for (const std::string split : {"validation", "test"})
    for (const std::string metric : {"accuracy", "mse", "mae"}) {
      const auto key = split + "_" + metric;
      if (!s.contains(key))
        continue;
      const auto of =
          split == "test" && validated ? (best ? " (best weights)" : " (final weights)") : "";
      out += row(split + " " + metric + of,
                 metric == "accuracy" ? percent_text(s[key]) : field_text(s, key.c_str()));
    }
  if (best) {
    const auto& b = s["best"];
    auto metric = field_text(b, "metric");
    std::replace(metric.begin(), metric.end(), '_', ' ');
    const bool percent = metric.size() > 8 && metric.substr(metric.size() - 8) == "accuracy";
    out += row("best evaluation",
               fmt::format("{} {} after step {}", metric,
                           percent ? percent_text(b.value("value", nlohmann::json()))
                                   : field_text(b, "value"),
                           field_text(b, "step")));
  }
  if (s.contains("stopped_early_at"))
    out +=
        row("stopped early", "after step " + field_text(s, "stopped_early_at") + "'s evaluation");
  return out;
}

std::string facts_table(const run_history& h) {
  const auto& s = h.summary;
  std::string status = h.finished() ? field_text(s, "status") : "running";
  std::string out = "<table id=\"facts\">";
  out += row("status", status == "failed" ? "<span class=\"failed\">failed</span>" : status);
  if (h.finished() && s.contains("error") && s["error"].is_string())
    out += row("error", echo(s["error"].get<std::string>()));
  const auto steps = h.finished()
                         ? field_text(s, "steps")
                         : (h.steps.empty() ? "0" : std::to_string(h.steps.back().step + 1));
  out += row("steps", steps);
  // While the run goes, its job.json says the policy (a hand-made folder may have neither).
  const auto& job = h.job;
  const nlohmann::json parallelism =
      job.is_object() && job.contains("parallelism") ? job["parallelism"] : nlohmann::json();
  out += row("policy", field_text(s.is_object() ? s : parallelism, "policy"));
  if (h.finished()) {
    out += row("samples/s", field_text(s, "samples_per_s"));
    out += row("final train loss", field_text(s, "final_train_loss"));
    out += evaluation_facts(s);
    out += row("wall time from the first step (s)", field_text(s, "wall_s"));
  } else if (!h.steps.empty()) {
    out += row("latest loss", number_text(h.steps.back().loss));
    out += row("seconds so far", number_text(h.steps.back().t));
  }
  if (h.skipped_lines > 0)
    out += row("metrics.jsonl",
               fmt::format("{} line(s) held no record and were skipped", h.skipped_lines));
  return out + "</table>";
}

std::string run_body(const run_history& h, const page_options& o) {
  std::string out = "<h1>" + echo(h.name()) + "</h1>";
  if (o.live)
    out += "<p class=\"live\">Live: this page redraws itself as the run writes.</p>";
  out += facts_table(h) + settings_table(h);
  out += "<h2>Learning</h2>" + learning_charts(h) + member_chart(h) + lr_chart(h);
  if (!h.steps.empty())
    out += "<h2>Speed</h2>" + throughput_chart(h);
  if (!h.workers.empty())
    out += worker_chart(h);
  out += classes_section(h) + async_charts(h) + pipeline_charts(h) + events_table(h);
  if (!h.plan.empty())
    out += "<h2>Plan</h2><pre id=\"plan\">" + echo(h.plan, max_block) + "</pre>";
  if (!h.job.is_null())
    out += "<h2>Job (resolved)</h2><pre id=\"job\">" + echo(h.job.dump(2), max_block) + "</pre>";
  return out;
}

}  // namespace

std::string render_run_page(const run_history& h, const page_options& options) {
  return page("troupe report: " + h.name(), run_body(h, options), options);
}

}  // namespace troupe
