#include "core/suite/live_table.hpp"

#include "core/metrics/record_reader.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace troupe {
namespace {

std::string step_text(const job_row& r) {
  if (r.steps == 0 && r.status == "queued")
    return "-";
  return r.total_steps > 0 ? fmt::format("{}/{}", r.steps, r.total_steps) : std::to_string(r.steps);
}

std::string loss_text(const job_row& r) {
  return r.loss ? fmt::format("{:.4f}", *r.loss) : "-";
}

std::string accuracy_text(const job_row& r) {
  return r.accuracy ? fmt::format("{:.2f}% {}", *r.accuracy * 100, r.accuracy_split) : "-";
}

}  // namespace

void job_row::feed(std::string_view text) {
  lines_.feed(text, [this](const nlohmann::json& line) {
    const auto record = records::parse_record(line);
    if (const auto* s = record ? std::get_if<records::step>(&*record) : nullptr) {
      // metrics.jsonl's "step" is the 0-based index of the step: after it, index + 1 are done.
      steps = s->step + 1;
      loss = s->loss;
    } else if (const auto* e = record ? std::get_if<records::eval>(&*record) : nullptr) {
      if (e->metric == "accuracy") {
        accuracy = e->accuracy;
        accuracy_split = e->split == "validation" ? "val" : "test";
      }
    }
  });
}

std::vector<std::string> render_table(const std::vector<job_row>& rows, std::size_t width) {
  std::vector<std::vector<std::string>> cells{{"job", "status", "step", "loss", "accuracy"}};
  for (const auto& r : rows)
    cells.push_back({r.name, r.status, step_text(r), loss_text(r), accuracy_text(r)});
  std::vector<std::size_t> widths(cells.front().size(), 0);
  for (const auto& row : cells)
    for (std::size_t c = 0; c < row.size(); ++c)
      widths[c] = std::max(widths[c], row[c].size());
  std::vector<std::string> lines;
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c)
      line += c + 1 < row.size() ? fmt::format("{:<{}}  ", row[c], widths[c]) : row[c];
    if (width > 1 && line.size() > width - 1)
      line.resize(width - 1);
    lines.push_back(line);
  }
  return lines;
}

std::string row_line(const job_row& r) {
  auto line = fmt::format("  {}: {} step {}", r.name, r.status, step_text(r));
  if (r.loss)
    line += " loss " + loss_text(r);
  if (r.accuracy)
    line += fmt::format(" {} acc {:.2f}%", r.accuracy_split, *r.accuracy * 100);
  return line;
}

}  // namespace troupe
