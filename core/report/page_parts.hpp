// What the run page and the suite page share: the page around a body, how figures and text from
// a run folder are shown, and the links between pages. Text a folder hands the page is cut to a
// bound (a 100 MB error string in an edited summary.json made a 700 MB page; nothing troupe
// writes comes near the bounds) and links are built from folder names, never from a name a file
// states.
#pragma once

#include "core/report/report_page.hpp"
#include "core/report/run_history.hpp"
#include "core/report/svg_chart.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace troupe {

constexpr std::size_t max_echo = 4096;        ///< a value: an error, a name, an event
constexpr std::size_t max_block = 256 << 10;  ///< the plan, the job

/// `text`, escaped for HTML, cut at `limit` characters with a note of what was left out.
std::string echo(const std::string& text, std::size_t limit = max_echo);

/// The link to a suite job's page from the suite's: its folder's name percent-encoded below
/// "./", so that no name can become a scheme such as javascript:.
std::string job_href(const std::string& folder);

/// The whole HTML document: `body` with the page's style, and the live script when served.
std::string page(const std::string& title, const std::string& body, const page_options& o);

/// A figure as the tables show it: "-" when not finite; `digits` significant digits, but whole
/// numbers (no exponent) from 10^digits (or 10^4) up.
std::string number_text(double v, int digits = 4);
/// A fraction as a percentage with two decimals, or "-".
std::string percent_text(const nlohmann::json& v);
/// `j[key]` as a table shows it (echoed when a string), or "-".
std::string field_text(const nlohmann::json& j, const char* key);
/// A table row of a name and its (already HTML) value.
std::string row(const std::string& name, const std::string& value);

/// The per-step series of `h` against step (by_time false) or seconds since the start.
std::vector<chart_point> step_series(const run_history& h, bool by_time, double step_row::*field);

}  // namespace troupe
