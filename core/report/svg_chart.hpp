// Charts drawn as inline SVG, so that a report is one file that works offline: line charts
// (series of points, with vertical markers for events) and horizontal bar charts (stacked
// segments). Pure functions of their input; every element a test looks for carries a data-
// attribute: the chart's `data-chart` id, and each series' `data-series` and `data-points`.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct chart_point {
  double x = 0;
  double y = 0;
};

struct chart_series {
  std::string name;
  std::vector<chart_point> points;
  std::string color;   ///< empty: the palette's next color
  bool faint = false;  ///< drawn thin and pale (raw values under their smoothed line)
  bool dots = false;   ///< also mark each point (sparse series such as evaluations)
};

/// A vertical line at x, with a tooltip.
struct chart_marker {
  double x = 0;
  std::string label;
};

struct line_chart {
  std::string id;  ///< data-chart
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<chart_series> series;
  std::vector<chart_marker> markers;
  bool y_from_zero = false;
  /// Values above are drawn at the top edge: one diverged curve must not flatten the rest.
  std::optional<double> y_limit{};
};

struct bar_segment {
  std::string name;
  double value = 0;
};

struct bar_row {
  std::string label;
  std::vector<bar_segment> segments;  ///< stacked left to right; same names in every row
};

struct bar_chart {
  std::string id;
  std::string title;
  std::string unit;  ///< shown after values, e.g. "s"
  std::vector<bar_row> rows;
};

/// The most rows a bar chart draws; it says how many more there are.
constexpr std::size_t max_bar_rows = 64;

std::string render_svg(const line_chart& chart);
std::string render_svg(const bar_chart& chart);

/// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string html_escape(const std::string& s);

/// The color of series k (a palette that stays apart on screen and in grey print).
const char* palette_color(std::size_t k);

/// Tick positions for [lo, hi]: about `count` round numbers (1, 2 or 5 times a power of ten).
std::vector<double> nice_ticks(double lo, double hi, int count);

}  // namespace troupe
