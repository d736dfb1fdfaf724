#include "core/train/confusion.hpp"

#include <ATen/ATen.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace troupe {

void add_confusion(std::vector<int64_t>& counts, const at::Tensor& logits, const at::Tensor& labels,
                   int64_t classes) {
  if (classes <= 0 || classes > max_confusion_classes || logits.dim() != 2 ||
      logits.size(1) != classes)
    return;
  const auto cells = classes * classes;
  if (counts.empty())
    counts.assign(static_cast<std::size_t>(cells), 0);
  const auto predicted = logits.argmax(1).to(at::kLong);
  const auto cell = labels.to(predicted.device(), at::kLong) * classes + predicted;
  const auto tally = at::bincount(cell, {}, cells).to(at::kCPU, at::kLong).contiguous();
  const auto* n = tally.data_ptr<int64_t>();
  for (int64_t i = 0; i < cells; ++i)
    counts[static_cast<std::size_t>(i)] += n[i];
}

void add_counts(std::vector<int64_t>& into, const std::vector<int64_t>& more) {
  if (more.empty())
    return;
  if (into.empty()) {
    into = more;
    return;
  }
  if (into.size() != more.size())
    throw std::invalid_argument("confusion counts of " + std::to_string(more.size()) +
                                " cells added to " + std::to_string(into.size()));
  for (std::size_t i = 0; i < into.size(); ++i)
    into[i] += more[i];
}

int64_t confusion_classes(const std::vector<int64_t>& counts) {
  const auto k = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(counts.size()))));
  if (static_cast<std::size_t>(k * k) != counts.size())
    throw std::invalid_argument("confusion counts of " + std::to_string(counts.size()) +
                                " cells are not a square matrix");
  return k;
}

}  // namespace troupe
