// Random search over a suite's hyper-parameters, beside the grid of `sweep`:
//
//   "search": {"trials": 20, "seed": 7,
//              "space": {"optimizer.lr": {"log_uniform": [1e-4, 0.3]},
//                        "optimizer.momentum": {"uniform": [0.8, 0.99]},
//                        "training.batch_size": {"int": [16, 128]},
//                        "model.hidden": {"choice": [[64], [128, 64]]}}}
//
// Each trial draws every key of the space once, in key order, from one generator seeded by the
// search's seed (the suite's "seed" when it gives none, else 0): the same file gives the same
// trials on every machine. uniform and log_uniform draws keep 6 significant digits, so that the
// leaderboard shows 0.0123457, not 0.012345678901234567; int is inclusive of both ends.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace troupe {

/// One dimension of the space.
struct search_axis {
  enum class kind { uniform, log_uniform, integer, choice };
  std::string key;  ///< a dotted job key, as `sweep` and `--set` take it
  kind what = kind::uniform;
  double low = 0, high = 0;                          ///< uniform, log_uniform, int
  nlohmann::json choices = nlohmann::json::array();  ///< choice
};

struct search_space {
  int64_t trials = 0;
  uint64_t seed = 0;
  std::vector<search_axis> axes;  ///< in key order
};

/// A trial: each key's value.
using search_trial = std::vector<std::pair<std::string, nlohmann::json>>;

/// The file's `search`, or nullopt when it has none or it is bad (each problem added, naming its
/// path: "/search/space/optimizer.lr/log_uniform: ..."). At most `max_trials` trials.
std::optional<search_space> read_search(const nlohmann::json& file, int64_t max_trials,
                                        std::vector<std::string>& problems);

/// The space's trials, in order.
std::vector<search_trial> draw_trials(const search_space& space);

}  // namespace troupe
