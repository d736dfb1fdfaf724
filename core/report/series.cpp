#include "core/report/series.hpp"

#include <algorithm>
#include <cmath>

namespace troupe {

std::vector<chart_point> smoothed(const std::vector<chart_point>& points) {
  std::vector<chart_point> out;
  out.reserve(points.size());
  const double span = std::max(1.0, static_cast<double>(points.size()) / 40.0);
  const double keep = 1.0 - 1.0 / span;
  double average = 0;
  double weight = 0;
  for (const auto& p : points) {
    average = keep * average + (1.0 - keep) * p.y;
    weight = keep * weight + (1.0 - keep);
    out.push_back({p.x, average / weight});
  }
  return out;
}

std::vector<chart_point> thinned(const std::vector<chart_point>& points, std::size_t max_points) {
  if (points.size() <= max_points || max_points == 0)
    return points;
  std::vector<chart_point> out;
  out.reserve(max_points);
  const std::size_t n = points.size();
  for (std::size_t b = 0; b < max_points; ++b) {
    const std::size_t first = b * n / max_points;
    const std::size_t last = (b + 1) * n / max_points;
    double x = 0;
    double y = 0;
    for (std::size_t i = first; i < last; ++i) {
      x += points[i].x;
      y += points[i].y;
    }
    const auto count = static_cast<double>(last - first);
    out.push_back({x / count, y / count});
  }
  return out;
}

}  // namespace troupe
