#include "core/suite/stop_losers.hpp"

#include "core/metrics/record_reader.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace troupe {

std::optional<double> median(std::vector<double> xs) {
  if (xs.empty())
    return std::nullopt;
  std::sort(xs.begin(), xs.end());
  const auto mid = xs.size() / 2;
  return xs.size() % 2 == 1 ? xs[mid] : (xs[mid - 1] + xs[mid]) / 2;
}

std::optional<std::string> stop_loser_reason(int64_t after, double value,
                                             const std::vector<double>& finished,
                                             judged_figure figure) {
  const auto m = median(finished);
  if (!m || !figure.worse(value, *m))
    return std::nullopt;
  return fmt::format("stopped by stop_losers after {} evaluation{}: {} {:.6g} {} median {:.6g}",
                     after, after == 1 ? "" : "s", figure.name(), value, figure.worse_sign(), *m);
}

void validation_history::feed(std::string_view text) {
  lines_.feed(text, [this](const nlohmann::json& line) {
    // The final test evaluation is an eval too, of the test split: it does not count.
    const auto record = records::parse_record(line);
    // A resumed run redoes the steps after its checkpoint: their evaluations come again.
    if (const auto* r = record ? std::get_if<records::resumed>(&*record) : nullptr)
      while (!steps_.empty() && steps_.back() > r->step) {
        steps_.pop_back();
        figures_.pop_back();
      }
    const auto* e = record ? std::get_if<records::eval>(&*record) : nullptr;
    if (e && e->split == "validation" && (figure_.by_loss || e->metric == "accuracy")) {
      figures_.push_back(figure_.by_loss ? e->loss : e->accuracy);
      steps_.push_back(e->step);
    }
  });
}

std::optional<double> validation_history::at(int64_t k) const {
  if (k < 1 || static_cast<std::size_t>(k) > figures_.size())
    return std::nullopt;
  return figures_[static_cast<std::size_t>(k - 1)];
}

}  // namespace troupe
