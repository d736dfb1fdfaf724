// The report page of a run or a suite: one self-contained HTML file (inline CSS and SVG, no
// script unless live, nothing fetched), drawn from what the output folder holds.
#pragma once

#include "core/report/run_history.hpp"
#include "core/report/suite_history.hpp"

#include <string>

namespace troupe {

struct page_options {
  /// Served by `troupe report --serve`: the page asks its server every second whether the
  /// folder changed, and redraws itself when it did.
  bool live = false;
};

std::string render_run_page(const run_history& h, const page_options& options);
/// `job_link`: the relative link of a job's own page, e.g. "NAME/report.html".
std::string render_suite_page(const suite_history& s, const page_options& options);

}  // namespace troupe
