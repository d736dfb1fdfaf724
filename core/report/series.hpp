// Shaping a run's series for a chart: smoothing noisy per-step values and thinning long series
// to a number of points a browser draws at once. Pure functions.
#pragma once

#include "core/report/svg_chart.hpp"

#include <cstddef>
#include <vector>

namespace troupe {

/// Exponential moving average, debiased at the start (as TensorBoard's smoothing), with a span
/// that grows with the series: about a fortieth of its points.
std::vector<chart_point> smoothed(const std::vector<chart_point>& points);

/// At most `max_points` points: consecutive runs of points replaced by their mean (x and y).
/// Series that fit are returned as they are.
std::vector<chart_point> thinned(const std::vector<chart_point>& points, std::size_t max_points);

/// The most points a report's series holds (a one-hour run has a million steps).
constexpr std::size_t max_chart_points = 2000;

}  // namespace troupe
