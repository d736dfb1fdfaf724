#include "core/pipeline/stage_split.hpp"

#include "core/errors.hpp"

#include <algorithm>
#include <limits>

namespace troupe {
namespace {

// The indices of the layers a stage may begin at: every layer with parameters except the first
// (the first stage begins at layer 0).
std::vector<int64_t> cut_points(const std::vector<layer_summary>& layers) {
  std::vector<int64_t> cuts;
  bool seen_parameters = false;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].parameters == 0)
      continue;
    if (seen_parameters)
      cuts.push_back(static_cast<int64_t>(i));
    seen_parameters = true;
  }
  return cuts;
}

std::string parameterized_names(const std::vector<layer_summary>& layers) {
  std::string names;
  for (const auto& l : layers)
    if (l.parameters > 0)
      names += (names.empty() ? "" : ", ") + l.name;
  return names;
}

std::vector<stage_slice> slices_from(const std::vector<layer_summary>& layers,
                                     const std::vector<int64_t>& starts) {
  std::vector<stage_slice> slices;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    stage_slice s;
    s.begin = starts[i];
    s.end = i + 1 < starts.size() ? starts[i + 1] : static_cast<int64_t>(layers.size());
    for (auto l = s.begin; l < s.end; ++l) {
      s.parameters += layers[static_cast<std::size_t>(l)].parameters;
      s.buffer_values += layers[static_cast<std::size_t>(l)].buffer_values;
    }
    slices.push_back(s);
  }
  return slices;
}

// Groups the units (a parameterized layer and its followers) into `stages` consecutive runs
// minimizing the largest run's parameters: dynamic programming over (units used, stages used).
std::vector<int64_t> balanced_starts(const std::vector<layer_summary>& layers,
                                     const std::vector<int64_t>& cuts, int64_t stages) {
  std::vector<int64_t> unit_begin{0};
  unit_begin.insert(unit_begin.end(), cuts.begin(), cuts.end());
  const auto units = unit_begin.size();
  std::vector<int64_t> prefix(units + 1, 0);  // parameters of the first u units
  for (std::size_t u = 0; u < units; ++u) {
    const auto end = u + 1 < units ? unit_begin[u + 1] : static_cast<int64_t>(layers.size());
    int64_t p = 0;
    for (auto l = unit_begin[u]; l < end; ++l)
      p += layers[static_cast<std::size_t>(l)].parameters;
    prefix[u + 1] = prefix[u] + p;
  }
  const auto k_count = static_cast<std::size_t>(stages);
  constexpr int64_t infinite = std::numeric_limits<int64_t>::max();
  // best[k][u]: smallest possible largest stage when the first u units form k stages.
  std::vector<std::vector<int64_t>> best(k_count + 1, std::vector<int64_t>(units + 1, infinite));
  std::vector<std::vector<std::size_t>> from(k_count + 1, std::vector<std::size_t>(units + 1, 0));
  best[0][0] = 0;
  for (std::size_t k = 1; k <= k_count; ++k)
    for (std::size_t u = k; u <= units; ++u)
      for (std::size_t v = k - 1; v < u; ++v) {
        if (best[k - 1][v] == infinite)
          continue;
        const auto cost = std::max(best[k - 1][v], prefix[u] - prefix[v]);
        if (cost < best[k][u]) {  // strict: the earliest boundary wins a tie
          best[k][u] = cost;
          from[k][u] = v;
        }
      }
  std::vector<int64_t> starts(k_count);
  for (std::size_t k = k_count, u = units; k > 0; --k) {
    u = from[k][u];
    starts[k - 1] = unit_begin[u];
  }
  return starts;
}

}  // namespace

std::vector<stage_slice> split_stages(const std::vector<layer_summary>& layers, int64_t stages,
                                      const std::vector<std::string>& boundaries) {
  const auto cuts = cut_points(layers);
  const auto units = static_cast<int64_t>(cuts.size()) + 1;
  if (stages > units)
    throw job_error({"/parallelism/stages: " + std::to_string(stages) +
                     " stages, but the model has only " + std::to_string(units) +
                     " layers with parameters to give them (" + parameterized_names(layers) + ")"});
  if (boundaries.empty())
    return slices_from(layers, balanced_starts(layers, cuts, stages));

  std::vector<std::string> problems;
  std::vector<int64_t> starts{0};
  for (std::size_t i = 0; i < boundaries.size(); ++i) {
    const auto where = "/parallelism/split/" + std::to_string(i);
    auto it = std::find_if(layers.begin(), layers.end(),
                           [&](const layer_summary& l) { return l.name == boundaries[i]; });
    if (it == layers.end()) {
      std::string names;
      for (const auto& l : layers)
        names += (names.empty() ? "" : ", ") + l.name;
      problems.push_back(where + ": no layer \"" + boundaries[i] + "\" in the model (" + names +
                         ")");
      continue;
    }
    const auto index = static_cast<int64_t>(it - layers.begin());
    if (std::find(cuts.begin(), cuts.end(), index) == cuts.end()) {
      problems.push_back(where + ": a stage must begin at a layer with parameters other than the " +
                         "first, one of (" + parameterized_names(layers) +
                         ") less the first; got \"" + boundaries[i] + "\"");
      continue;
    }
    if (index <= starts.back())
      problems.push_back(
          where + ": \"" + boundaries[i] +
          "\" does not come after the previous boundary; list stages in model order");
    starts.push_back(index);
  }
  if (!problems.empty())
    throw job_error(problems);
  return slices_from(layers, starts);
}

}  // namespace troupe
