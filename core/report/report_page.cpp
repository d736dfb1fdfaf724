#include "core/report/report_page.hpp"

#include "core/report/series.hpp"
#include "core/report/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace troupe {
namespace {

const char* page_style = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 800px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; } td, th { padding: 2px 10px; text-align: left; }
th { border-bottom: 1px solid #999; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f5f5f5; padding: 8px; overflow-x: auto; font-size: 12px; }
.note { color: #666; } .live { color: #2ca02c; } .failed { color: #d62728; }
svg.chart { display: block; margin: 10px 0; }
svg .title { font-size: 14px; font-weight: 600; } svg .tick, svg .legend { font-size: 11px; fill: #444; }
svg .axis { font-size: 12px; fill: #444; } svg .plot { fill: none; stroke: #bbb; }
svg .grid { stroke: #eee; } svg .line { fill: none; stroke-width: 1.6; }
svg .faint { stroke-width: 0.8; opacity: 0.35; } svg .marker { stroke: #888; stroke-dasharray: 4 3; }
)";

// Asks the server every second whether the folder changed ("version" next to the page), and
// swaps in the redrawn page when it did. A server that went away leaves the last page shown.
const char* live_script = R"(
(function () {
  var seen = null;
  function poll() {
    fetch('version', {cache: 'no-store'}).then(function (r) { return r.ok ? r.text() : null; })
      .then(function (v) {
        if (v === null) return null;
        if (seen === null) { seen = v; return null; }
        if (v === seen) return null;
        seen = v;
        return fetch(location.pathname, {cache: 'no-store'}).then(function (r) { return r.text(); })
          .then(function (html) {
            var doc = new DOMParser().parseFromString(html, 'text/html');
            document.body.replaceWith(doc.body);
          });
      })
      .catch(function () {})
      .then(function () { setTimeout(poll, 1000); });
  }
  poll();
})();
)";

std::string page(const std::string& title, const std::string& body, const page_options& o) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  // An empty icon: else the browser asks the server for /favicon.ico, which it does not have.
  out += "<link rel=\"icon\" href=\"data:,\"><title>" + html_escape(title) + "</title>";
  out += std::string("<style>") + page_style + "</style>";
  if (o.live)
    out += std::string("<script>") + live_script + "</script>";
  out += "</head><body>" + body + "</body></html>\n";
  return out;
}

std::string number_text(double v, int digits = 4) {
  if (!std::isfinite(v))
    return "-";
  if (std::abs(v) >= 1e4 && std::abs(v) < 1e15)  // samples/s: 74458, not 7.446e+04
    return fmt::format("{:.0f}", v);
  return fmt::format("{:.{}g}", v, digits);
}

std::string percent_text(const nlohmann::json& v) {
  return v.is_number() ? fmt::format("{:.2f}%", v.get<double>() * 100) : "-";
}

std::string field_text(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key))
    return "-";
  const auto& v = j[key];
  if (v.is_string())
    return html_escape(v.get<std::string>());
  if (v.is_number_integer())
    return std::to_string(v.get<int64_t>());
  if (v.is_number())
    return number_text(v.get<double>());
  return "-";
}

std::string row(const std::string& name, const std::string& value) {
  return "<tr><th>" + html_escape(name) + "</th><td>" + value + "</td></tr>";
}

std::vector<chart_marker> event_markers(const run_history& h) {
  std::vector<chart_marker> markers;
  for (const auto& e : h.events)
    markers.push_back({e.t, e.label});
  return markers;
}

// The per-step series of `h` against step (by_time false) or seconds since the start.
std::vector<chart_point> step_series(const run_history& h, bool by_time, double step_row::*field) {
  std::vector<chart_point> points;
  points.reserve(h.steps.size());
  for (const auto& s : h.steps)
    points.push_back({by_time ? s.t : static_cast<double>(s.step), s.*field});
  return points;
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
    if (h.evals.empty())
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
                       {"waiting", w.wait_s + w.idle_s}}});
  return render_svg(c) +
         "<p class=\"note\">compute: forward and backward; communication: sending gradients and "
         "waiting for the combined one (sync) or for fresh weights (async); apply: the optimizer "
         "step; waiting: held back by the staleness bound (async) or idle in the pipeline's "
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
  std::string out = "<h2>Events</h2><table id=\"events\"><tr><th>time (s)</th><th>event</th></tr>";
  for (const auto& e : h.events)
    out +=
        fmt::format("<tr><td class=\"num\">{:.2f}</td><td>{}</td></tr>", e.t, html_escape(e.label));
  return out + "</table>";
}

std::string facts_table(const run_history& h) {
  const auto& s = h.summary;
  std::string status = h.finished() ? field_text(s, "status") : "running";
  std::string out = "<table id=\"facts\">";
  out += row("status", status == "failed" ? "<span class=\"failed\">failed</span>" : status);
  if (h.finished() && s.contains("error") && s["error"].is_string())
    out += row("error", html_escape(s["error"].get<std::string>()));
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
    if (s.contains("validation_accuracy"))
      out += row("validation accuracy", percent_text(s["validation_accuracy"]));
    out += row("test accuracy", percent_text(s.value("test_accuracy", nlohmann::json())));
    out += row("wall time (s)", field_text(s, "wall_s"));
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
  std::string out = "<h1>" + html_escape(h.name()) + "</h1>";
  if (o.live)
    out += "<p class=\"live\">Live: this page redraws itself as the run writes.</p>";
  out += facts_table(h);
  out += "<h2>Learning</h2>" + learning_charts(h) + member_chart(h);
  if (!h.steps.empty())
    out += "<h2>Speed</h2>" + throughput_chart(h);
  if (!h.workers.empty())
    out += worker_chart(h);
  out += async_charts(h) + pipeline_charts(h) + events_table(h);
  if (!h.plan.empty())
    out += "<h2>Plan</h2><pre id=\"plan\">" + html_escape(h.plan) + "</pre>";
  if (!h.job.is_null())
    out += "<h2>Job (resolved)</h2><pre id=\"job\">" + html_escape(h.job.dump(2)) + "</pre>";
  return out;
}

// --- suites ---

std::string mean_std_text(const nlohmann::json& figure, bool percent) {
  if (!figure.is_object() || !figure.contains("mean") || !figure["mean"].is_number())
    return "-";
  const double scale = percent ? 100 : 1;
  const double mean = figure["mean"].get<double>() * scale;
  const double std = figure.contains("std") && figure["std"].is_number()
                         ? figure["std"].get<double>() * scale
                         : NAN;
  return percent ? fmt::format("{:.2f}&nbsp;±&nbsp;{:.2f}%", mean, std)
                 : fmt::format("{}&nbsp;±&nbsp;{}", number_text(mean), number_text(std, 2));
}

std::string leaderboard_table(const suite_history& s) {
  const auto& board = s.leaderboard;
  if (!board.is_object() || !board.contains("jobs") || !board["jobs"].is_array())
    return {};
  std::string out = fmt::format("<h2>Leaderboard</h2><p class=\"note\">ranked by {}</p>",
                                field_text(board, "ranked_by"));
  out +=
      "<table id=\"leaderboard\"><tr><th>rank</th><th>job</th><th>status</th>"
      "<th>validation acc.</th><th>test acc.</th><th>final train loss</th><th>samples/s</th>"
      "<th>wall (s)</th></tr>";
  for (const auto& j : board["jobs"]) {
    if (!j.is_object())
      continue;
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td><a href=\"{}/report.html\">{}</a></td><td>{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        field_text(j, "rank"), field_text(j, "name"), field_text(j, "name"),
        field_text(j, "status"), percent_text(j.value("validation_accuracy", nlohmann::json())),
        percent_text(j.value("test_accuracy", nlohmann::json())), field_text(j, "final_train_loss"),
        field_text(j, "samples_per_s"), field_text(j, "wall_s"));
  }
  return out + "</table>";
}

std::string jobs_text(const nlohmann::json& names) {
  std::string out;
  for (const auto& n : names)
    if (n.is_string())
      out += (out.empty() ? "" : ", ") + html_escape(n.get<std::string>());
  return out;
}

std::string settings_table(const suite_history& s) {
  const auto& summary = s.summary;
  if (!summary.is_object() || !summary.contains("settings") || !summary["settings"].is_array() ||
      summary["settings"].empty())
    return {};
  std::string out =
      "<h2>Settings over seeds (mean ± standard deviation)</h2><table id=\"settings\"><tr>"
      "<th>rank</th><th>setting</th><th>jobs</th><th>validation acc.</th><th>test acc.</th>"
      "<th>final train loss</th><th>samples/s</th></tr>";
  for (const auto& g : summary["settings"]) {
    if (!g.is_object())
      continue;
    const auto overrides = g.value("overrides", nlohmann::json::object());
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td><code>{}</code></td><td>{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        field_text(g, "rank"), html_escape(overrides.empty() ? "(the base job)" : overrides.dump()),
        jobs_text(g.value("jobs", nlohmann::json::array())),
        mean_std_text(g.value("validation_accuracy", nlohmann::json()), true),
        mean_std_text(g.value("test_accuracy", nlohmann::json()), true),
        mean_std_text(g.value("final_train_loss", nlohmann::json()), false),
        mean_std_text(g.value("samples_per_s", nlohmann::json()), false));
  }
  return out + "</table>";
}

std::string jobs_status_table(const suite_history& s) {
  std::string out =
      "<h2>Jobs</h2><table id=\"jobs\"><tr><th>job</th><th>status</th><th>step</th>"
      "<th>loss</th><th>accuracy</th></tr>";
  for (const auto& j : s.jobs) {
    std::string status = "not started";
    std::string step = "-";
    std::string loss = "-";
    std::string accuracy = "-";
    if (j.run) {
      const auto& h = *j.run;
      status = h.finished() ? field_text(h.summary, "status") : "running";
      if (!h.steps.empty()) {
        step = std::to_string(h.steps.back().step + 1);
        loss = number_text(h.steps.back().loss);
      }
      if (!h.evals.empty())
        accuracy = fmt::format("{:.2f}%", h.evals.back().accuracy * 100);
    }
    out += fmt::format(
        "<tr><td><a href=\"{}/report.html\">{}</a></td><td>{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        html_escape(j.name), html_escape(j.name), status, step, loss, accuracy);
  }
  return out + "</table>";
}

std::string overlaid_charts(const suite_history& s) {
  line_chart loss{"suite_loss", "Train loss per step (smoothed), every job", "step", "loss", {}, {},
                  true};
  line_chart accuracy{"suite_accuracy",
                      "Accuracy per evaluation, every job",
                      "step",
                      "accuracy (%)",
                      {},
                      {},
                      false};
  for (std::size_t k = 0; k < s.jobs.size(); ++k) {
    if (!s.jobs[k].run)
      continue;
    const auto& h = *s.jobs[k].run;
    loss.series.push_back(
        {s.jobs[k].name,
         thinned(smoothed(step_series(h, false, &step_row::loss)), max_chart_points),
         palette_color(k), false, false});
    std::vector<chart_point> evals;
    for (const auto& e : h.evals)
      evals.push_back({static_cast<double>(e.step), e.accuracy * 100});
    if (!evals.empty())
      accuracy.series.push_back(
          {s.jobs[k].name, thinned(evals, max_chart_points), palette_color(k), false, true});
  }
  std::string out = "<h2>Curves</h2>" + render_svg(loss);
  if (!accuracy.series.empty())
    out += render_svg(accuracy);
  return out;
}

}  // namespace

std::string render_run_page(const run_history& h, const page_options& options) {
  return page("troupe report: " + h.name(), run_body(h, options), options);
}

std::string render_suite_page(const suite_history& s, const page_options& options) {
  std::string body = "<h1>" + html_escape(s.name) + " (suite)</h1>";
  if (options.live)
    body += "<p class=\"live\">Live: this page redraws itself as the suite writes.</p>";
  body += "<table id=\"facts\">" +
          row("status", s.summary.is_object() ? field_text(s.summary, "status") : "running") +
          row("jobs", std::to_string(s.jobs.size())) + "</table>";
  body += leaderboard_table(s) + settings_table(s) + jobs_status_table(s) + overlaid_charts(s);
  return page("troupe report: " + s.name, body, options);
}

}  // namespace troupe
