#include "core/report/page_parts.hpp"

#include "core/report/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace troupe {
namespace {

const char* page_style = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 800px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; } td, th { padding: 2px 10px; text-align: left; }
th { border-bottom: 1px solid #999; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td a { white-space: nowrap; }  /* a job name in a table breaks nowhere */
pre#plan { white-space: pre-wrap; }  /* the plan's long lines wrap instead of hiding */
text.marker-label { font-size: 10px; fill: #a05a00; }
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

}  // namespace

std::string echo(const std::string& text, std::size_t limit) {
  if (text.size() <= limit)
    return html_escape(text);
  // Cut between characters, not inside one (a UTF-8 sequence cut in two is not UTF-8, and the
  // page would not be either); the rest counted in bytes, as it was cut.
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut;
  return html_escape(text.substr(0, cut)) + fmt::format(" … ({} more bytes)", text.size() - cut);
}

std::string job_href(const std::string& folder) {
  std::string out = "./";
  for (const unsigned char c : folder) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out + "/report.html";
}

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

std::string number_text(double v, int digits) {
  if (!std::isfinite(v))
    return "-";
  // Whole numbers where `digits` significant ones would turn to an exponent: samples/s 74458,
  // not 7.446e+04; a std of 530 at 2 digits, not 5.3e+02.
  if (std::abs(v) >= std::min(1e4, std::pow(10.0, digits)) && std::abs(v) < 1e15)
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
    return echo(v.get<std::string>());
  if (v.is_number_integer())
    return std::to_string(v.get<int64_t>());
  if (v.is_number())
    return number_text(v.get<double>());
  return "-";
}

std::string row(const std::string& name, const std::string& value) {
  return "<tr><th>" + html_escape(name) + "</th><td>" + value + "</td></tr>";
}

std::vector<chart_point> step_series(const run_history& h, bool by_time, double step_row::*field) {
  std::vector<chart_point> points;
  points.reserve(h.steps.size());
  for (const auto& s : h.steps)
    points.push_back({by_time ? s.t : static_cast<double>(s.step), s.*field});
  return points;
}

}  // namespace troupe
