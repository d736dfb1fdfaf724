#include "core/config/near_miss.hpp"

#include <algorithm>

namespace troupe {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  // The optimal-string-alignment table (keys are short: a whole table is cheap).
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::optional<std::string> nearest_key(const std::string& key,
                                       const std::vector<std::string>& known) {
  // Keys are short words: "lrr" for "lr" is a slip, "size" for "seed" is not.
  const std::size_t allowed = std::clamp<std::size_t>(key.size() / 3, 1, 3);
  std::optional<std::string> best;
  std::size_t best_distance = allowed + 1;
  for (const auto& k : known) {
    const auto d = edit_distance(key, k);
    if (d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace troupe
