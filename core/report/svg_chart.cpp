#include "core/report/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace troupe {
namespace {

// The plot area inside a chart of width x height pixels.
constexpr double width = 760;
constexpr double height = 300;
constexpr double left = 64;
constexpr double right = 16;
constexpr double top = 38;
constexpr double bottom = 44;

struct range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
  // A flat or empty range still needs a width to divide by.
  void widen() {
    if (empty()) {
      lo = 0;
      hi = 1;
    } else if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {
      const double pad = std::max(std::abs(hi) * 0.05, 1e-9);
      lo -= pad;
      hi += pad;
    }
  }
};

bool finite(const chart_point& p) {
  return std::isfinite(p.x) && std::isfinite(p.y);
}

std::string tick_label(double v) {
  if (v == 0)
    return "0";
  const double a = std::abs(v);
  if (a >= 1e5 || a < 1e-3)
    return fmt::format("{:.2g}", v);
  return fmt::format("{:.4g}", v);
}

std::string chart_open(const std::string& id, const std::string& title, double h) {
  return fmt::format(
      "<svg class=\"chart\" data-chart=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
      "role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">"
      "<text class=\"title\" x=\"{}\" y=\"16\">{}</text>",
      html_escape(id), width, h, width, h, html_escape(title), left, html_escape(title));
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

const char* palette_color(std::size_t k) {
  static const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                 "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return colors[k % (sizeof(colors) / sizeof(colors[0]))];
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
  std::vector<double> ticks;
  // A span past double's range (values near ±1e308) has no step to count in.
  if (!(hi > lo) || count < 1 || !std::isfinite(hi - lo))
    return ticks;
  const double rough = (hi - lo) / count;
  const double power = std::pow(10.0, std::floor(std::log10(rough)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= rough)
      break;
  }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    ticks.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  return ticks;
}

namespace {

// The data ranges of a line chart and the pixel positions they map to.
struct plot_area {
  range xs;
  range ys;
  double pw = width - left - right;
  double ph = height - top - bottom;
  // Halved before they are subtracted: the span of values near ±1e308 is past double's range,
  // and a position of NaN is no SVG.
  static double share(double v, const range& r) {
    return (v * 0.5 - r.lo * 0.5) / (r.hi * 0.5 - r.lo * 0.5);
  }
  double px(double x) const { return left + share(x, xs) * pw; }
  double py(double y) const { return top + ph - share(y, ys) * ph; }
};

plot_area fit(const line_chart& chart) {
  plot_area a;
  for (const auto& s : chart.series)
    for (const auto& p : s.points)
      if (finite(p)) {
        a.xs.add(p.x);
        a.ys.add(p.y);
      }
  for (const auto& m : chart.markers)
    if (std::isfinite(m.x))
      a.xs.add(m.x);
  if (chart.y_from_zero && !a.ys.empty())
    a.ys.lo = std::min(a.ys.lo, 0.0);
  if (chart.y_limit && !a.ys.empty() && a.ys.hi > *chart.y_limit && *chart.y_limit > a.ys.lo)
    a.ys.hi = *chart.y_limit;
  a.xs.widen();
  a.ys.widen();
  return a;
}

std::string axes_svg(const line_chart& chart, const plot_area& a) {
  std::string out = fmt::format(
      "<rect class=\"plot\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", left, top, a.pw, a.ph);
  for (double t : nice_ticks(a.ys.lo, a.ys.hi, 5))
    out += fmt::format(
        "<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text class=\"tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
        left, left + a.pw, a.py(t), a.py(t), left - 6, a.py(t) + 4, tick_label(t));
  for (double t : nice_ticks(a.xs.lo, a.xs.hi, 6))
    out +=
        fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                    a.px(t), top + a.ph + 16, tick_label(t));
  out += fmt::format("<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                     left + a.pw / 2, height - 6, html_escape(chart.x_label));
  out += fmt::format(
      "<text class=\"axis\" transform=\"translate(14,{}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text>",
      top + a.ph / 2, html_escape(chart.y_label));
  // Each marker's number above it, as the page's events table numbers them; its label on hover.
  for (std::size_t i = 0; i < chart.markers.size(); ++i) {
    const auto& m = chart.markers[i];
    if (std::isfinite(m.x))
      out += fmt::format(
          "<line class=\"marker\" data-marker=\"{}\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" "
          "y2=\"{}\"><title>{}</title></line>"
          "<text class=\"marker-label\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
          html_escape(m.label), a.px(m.x), a.px(m.x), top, top + a.ph, html_escape(m.label),
          a.px(m.x), top - 3, i + 1);
  }
  return out;
}

std::string series_svg(const chart_series& s, const std::string& color, const plot_area& a) {
  std::string coords;
  std::string dots;
  std::size_t drawn = 0;
  for (const auto& p : s.points) {
    if (!finite(p))
      continue;
    const double y = std::min(p.y, a.ys.hi);  // above a chart's y_limit: at the top edge
    coords += fmt::format("{:.1f},{:.1f} ", a.px(p.x), a.py(y));
    if (s.dots)
      dots += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>", a.px(p.x),
                          a.py(y), color);
    ++drawn;
  }
  return fmt::format(
             "<polyline class=\"{}\" data-series=\"{}\" data-points=\"{}\" stroke=\"{}\" "
             "points=\"{}\"/>",
             s.faint ? "line faint" : "line", html_escape(s.name), drawn, color, coords) +
         dots;
}

// A legend's colored square and name, the text's baseline at y.
std::string legend_entry(double x, double y, const std::string& color, const std::string& name) {
  return fmt::format(
      "<rect x=\"{:.1f}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
      "<text class=\"legend\" x=\"{:.1f}\" y=\"{}\">{}</text>",
      x, y - 9, color, x + 13, y, html_escape(name));
}

}  // namespace

std::string render_svg(const line_chart& chart) {
  const auto area = fit(chart);
  auto color_of = [&](std::size_t k) {
    return chart.series[k].color.empty() ? std::string(palette_color(k)) : chart.series[k].color;
  };
  std::string out = chart_open(chart.id, chart.title, height) + axes_svg(chart, area);
  for (std::size_t k = 0; k < chart.series.size(); ++k)
    out += series_svg(chart.series[k], color_of(k), area);
  // Legend entries right-aligned along the top, the last series rightmost; faint series are
  // the raw values under a smoothed line and share its entry.
  double legend_x = left + area.pw;
  for (std::size_t k = chart.series.size(); k-- > 0;) {
    const auto& s = chart.series[k];
    if (s.faint)
      continue;
    legend_x -= 7.0 * static_cast<double>(s.name.size()) + 18;
    out += legend_entry(legend_x, top - 5, color_of(k), s.name);
  }
  return out + "</svg>";
}

std::string render_svg(const bar_chart& chart) {
  constexpr double row_h = 22;
  constexpr double label_w = 150;
  // A corrupt or hostile metrics file may name a million workers: draw the first rows only.
  const std::size_t drawn = std::min(chart.rows.size(), max_bar_rows);
  const double more = chart.rows.size() > drawn ? row_h : 0;
  const double h = top + row_h * static_cast<double>(drawn) + more + 40;
  double widest = 0;
  for (const auto& r : chart.rows) {
    double total = 0;
    for (const auto& s : r.segments)
      total += std::max(0.0, s.value);
    widest = std::max(widest, total);
  }
  if (!(widest > 0))
    widest = 1;
  const double pw = width - label_w - right - 70;
  std::string out = chart_open(chart.id, chart.title, h);
  for (std::size_t i = 0; i < drawn; ++i) {
    const auto& r = chart.rows[i];
    const double y = top + row_h * static_cast<double>(i);
    out += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
                       label_w - 6, y + 15, html_escape(r.label));
    double x = label_w;
    double total = 0;
    for (std::size_t k = 0; k < r.segments.size(); ++k) {
      const auto& s = r.segments[k];
      const double w = std::max(0.0, s.value) / widest * pw;
      out += fmt::format(
          "<rect class=\"bar\" data-segment=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
          "height=\"{}\" fill=\"{}\"><title>{}: {} {}</title></rect>",
          html_escape(s.name), x, y + 3, w, row_h - 6, palette_color(k), html_escape(s.name),
          tick_label(s.value), html_escape(chart.unit));
      x += w;
      total += std::max(0.0, s.value);
    }
    out += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\">{} {}</text>", x + 4, y + 15,
                       tick_label(total), html_escape(chart.unit));
  }
  if (more > 0)
    out += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{:.1f}\">{} more rows not drawn</text>",
                       label_w, top + row_h * static_cast<double>(drawn) + 15,
                       chart.rows.size() - drawn);
  // Legend from the first row's segment names.
  double legend_x = label_w;
  const double legend_y = h - 14;
  if (!chart.rows.empty())
    for (std::size_t k = 0; k < chart.rows.front().segments.size(); ++k) {
      const auto& name = chart.rows.front().segments[k].name;
      out += legend_entry(legend_x, legend_y, palette_color(k), name);
      legend_x += 7.0 * static_cast<double>(name.size()) + 30;
    }
  out += "</svg>";
  return out;
}

}  // namespace troupe
