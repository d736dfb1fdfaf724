// The report page of a suite: its leaderboard, its settings over seeds, each job's state and
// every job's curves overlaid.
#include "core/report/page_parts.hpp"
#include "core/report/report_page.hpp"
#include "core/report/series.hpp"
#include "core/report/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace troupe {
namespace {

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

// A leaderboard row's job: linked where the name it states is a job folder of the suite.
std::string job_cell(const suite_history& s, const nlohmann::json& row) {
  const auto name = field_text(row, "name");
  if (!row.contains("name") || !row["name"].is_string())
    return name;
  const auto& folder = row["name"].get_ref<const std::string&>();
  const bool known = std::any_of(s.jobs.begin(), s.jobs.end(),
                                 [&](const suite_job_history& j) { return j.name == folder; });
  return known ? fmt::format("<a href=\"{}\">{}</a>", job_href(folder), name) : name;
}

// What a job sets on the suite's base, "optimizer.lr=0.05, seed=2": its leaderboard row says
// what the job is, whatever it is named.
std::string overrides_text(const nlohmann::json& job) {
  const auto overrides = job.value("overrides", nlohmann::json::object());
  if (!overrides.is_object() || overrides.empty())
    return "(the base job)";
  std::string out;
  for (const auto& [key, value] : overrides.items())
    out += (out.empty() ? "" : ", ") + key + "=" + value.dump();
  return echo(out);
}

// A suite of regression jobs ranks by a loss ("validation_loss", "test_loss"): its jobs have no
// accuracy, and its tables show the losses instead.
bool ranked_by_loss(const nlohmann::json& j) {
  const auto by = j.is_object() ? j.value("ranked_by", nlohmann::json()) : nlohmann::json();
  return by == "validation_loss" || by == "test_loss";
}

// The two figures a table shows of each job or setting: accuracies (percent), or losses.
struct shown_figures {
  const char* validation;
  const char* test;
  const char* validation_header;
  const char* test_header;
  bool percent;
};

shown_figures figures_shown(bool by_loss) {
  if (by_loss)
    return {"validation_loss", "test_loss", "validation loss", "test loss", false};
  return {"validation_accuracy", "test_accuracy", "validation acc.", "test acc.", true};
}

std::string leaderboard_table(const suite_history& s) {
  const auto& board = s.leaderboard;
  if (!board.is_object() || !board.contains("jobs") || !board["jobs"].is_array())
    return {};
  const auto shown = figures_shown(ranked_by_loss(board));
  std::string out = fmt::format("<h2>Leaderboard</h2><p class=\"note\">ranked by {}</p>",
                                field_text(board, "ranked_by"));
  out += fmt::format(
      "<table id=\"leaderboard\"><tr><th>rank</th><th>job</th><th>settings</th><th>status</th>"
      "<th>{}</th><th>{}</th><th>final train loss</th><th>samples/s</th><th>wall (s)</th></tr>",
      shown.validation_header, shown.test_header);
  const auto figure = [&](const nlohmann::json& j, const char* key) {
    return shown.percent ? percent_text(j.value(key, nlohmann::json())) : field_text(j, key);
  };
  for (const auto& j : board["jobs"]) {
    if (!j.is_object())
      continue;
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        field_text(j, "rank"), job_cell(s, j), overrides_text(j), field_text(j, "status"),
        figure(j, shown.validation), figure(j, shown.test), field_text(j, "final_train_loss"),
        field_text(j, "samples_per_s"), field_text(j, "wall_s"));
  }
  return out + "</table>";
}

std::string jobs_text(const nlohmann::json& names) {
  std::string out;
  for (const auto& n : names)
    if (n.is_string())
      out += (out.empty() ? "" : ", ") + echo(n.get<std::string>());
  return out;
}

std::string settings_table(const suite_history& s) {
  const auto& summary = s.summary;
  if (!summary.is_object() || !summary.contains("settings") || !summary["settings"].is_array() ||
      summary["settings"].empty())
    return {};
  const auto shown = figures_shown(ranked_by_loss(summary));
  std::string out = fmt::format(
      "<h2>Settings over seeds (mean ± standard deviation)</h2><table id=\"settings\"><tr>"
      "<th>rank</th><th>setting</th><th>jobs</th><th>{}</th><th>{}</th>"
      "<th>final train loss</th><th>samples/s</th></tr>",
      shown.validation_header, shown.test_header);
  for (const auto& g : summary["settings"]) {
    if (!g.is_object())
      continue;
    const auto overrides = g.value("overrides", nlohmann::json::object());
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td><code>{}</code></td><td>{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        field_text(g, "rank"), echo(overrides.empty() ? "(the base job)" : overrides.dump()),
        jobs_text(g.value("jobs", nlohmann::json::array())),
        mean_std_text(g.value(shown.validation, nlohmann::json()), shown.percent),
        mean_std_text(g.value(shown.test, nlohmann::json()), shown.percent),
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
      // A regression job's evaluations hold an mse or mae, no accuracy.
      if (!h.evals.empty() && h.evals.back().has_accuracy)
        accuracy = fmt::format("{:.2f}%", h.evals.back().accuracy * 100);
    }
    out += fmt::format(
        "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        job_href(j.name), echo(j.name), status, step, loss, accuracy);
  }
  return out + "</table>";
}

bool diverged(const suite_job_history& j) {
  return j.run && j.run->summary.is_object() &&
         j.run->summary.value("status", std::string()) == "diverged";
}

// The loss chart's top: the highest smoothed loss of the jobs that did not diverge, when a
// diverged one would otherwise stretch the axis past it (nullopt: nothing to clip).
std::optional<double> loss_limit(const line_chart& loss, const std::vector<bool>& wild) {
  double calm = -INFINITY, all = -INFINITY;
  for (std::size_t k = 0; k < loss.series.size(); ++k)
    for (const auto& p : loss.series[k].points)
      if (std::isfinite(p.y)) {
        all = std::max(all, p.y);
        if (!wild[k])
          calm = std::max(calm, p.y);
      }
  if (!std::isfinite(calm) || calm <= 0 || all <= calm * 1.5)
    return std::nullopt;
  return calm * 1.1;
}

// A job's accuracy per evaluation of one split: validation where it has one (its test set is
// evaluated once, at the end), else test; none under mse or l1. `by_loss`: its evaluation loss
// instead, for a suite of regression jobs, which have no accuracy.
std::pair<std::string, std::vector<chart_point>> evaluation_series(const run_history& h,
                                                                   bool by_loss) {
  const bool validated = std::any_of(h.evals.begin(), h.evals.end(),
                                     [](const eval_row& e) { return e.split == "validation"; });
  const std::string split = validated ? "validation" : "test";
  std::vector<chart_point> points;
  for (const auto& e : h.evals)
    if (e.split == split && e.member < 0 && (by_loss || e.has_accuracy))
      points.push_back({static_cast<double>(e.step), by_loss ? e.loss : e.accuracy * 100});
  return {split, points};
}

// Whether no job reports an accuracy: the suite's evaluation chart then draws losses.
bool no_accuracy(const suite_history& s) {
  return std::none_of(s.jobs.begin(), s.jobs.end(), [](const suite_job_history& j) {
    return j.run && std::any_of(j.run->evals.begin(), j.run->evals.end(),
                                [](const eval_row& e) { return e.has_accuracy; });
  });
}

std::string overlaid_charts(const suite_history& s) {
  line_chart loss{"suite_loss", "Train loss per step (smoothed), every job", "step", "loss", {}, {},
                  true};
  std::vector<bool> wild;           // by loss series: its job diverged
  std::vector<std::string> splits;  // by accuracy series: the split it draws
  const bool by_loss = no_accuracy(s);
  const std::string measured = by_loss ? "loss" : "accuracy";
  line_chart accuracy{"suite_accuracy",
                      (by_loss ? "Loss" : "Accuracy") + std::string(" per evaluation, every job"),
                      "step",
                      by_loss ? "loss" : "accuracy (%)",
                      {},
                      {},
                      false};
  for (std::size_t k = 0; k < s.jobs.size(); ++k) {
    if (!s.jobs[k].run)
      continue;
    const auto& h = *s.jobs[k].run;
    wild.push_back(diverged(s.jobs[k]));
    loss.series.push_back(
        {s.jobs[k].name + (wild.back() ? " (diverged)" : ""),
         thinned(smoothed(step_series(h, false, &step_row::loss)), max_chart_points),
         palette_color(k), false, false});
    auto [split, evals] = evaluation_series(h, by_loss);
    if (!evals.empty()) {
      accuracy.series.push_back(
          {s.jobs[k].name, thinned(evals, max_chart_points), palette_color(k), false, true});
      splits.push_back(split);
    }
  }
  // The title names the split when every job's is the same, else each line does.
  if (!splits.empty() && std::equal(splits.begin() + 1, splits.end(), splits.begin()))
    accuracy.title =
        (splits[0] == "test" ? "Test " : "Validation ") + measured + " per evaluation, every job";
  else
    for (std::size_t k = 0; k < splits.size(); ++k)
      accuracy.series[k].name += " (" + splits[k] + ")";
  loss.y_limit = loss_limit(loss, wild);
  if (loss.y_limit)
    loss.title += fmt::format(" (clipped at {:.3g}: diverged jobs run off the top)", *loss.y_limit);
  std::string out = "<h2>Curves</h2>" + render_svg(loss);
  if (!accuracy.series.empty())
    out += render_svg(accuracy);
  return out;
}

}  // namespace

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
