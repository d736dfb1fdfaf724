#include "apps/troupe/suite_watch.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>

namespace troupe {

loser_watch::loser_watch(std::optional<int64_t> after, std::optional<asha_config> asha,
                         int64_t max_steps, std::size_t jobs, judged_figure figure)
    : after_(after),
      figure_(figure),
      histories_(jobs, validation_history(figure)),
      offsets_(jobs, 0),
      judged_(jobs, 0),
      stopped_(jobs) {
  if (asha)
    rungs_.emplace(*asha, max_steps, figure);
}

void loser_watch::read(std::size_t index, const std::string& metrics_path) {
  if (!enabled())
    return;
  // The child creates the file after it starts; until then there is nothing to read.
  std::ifstream in(metrics_path, std::ios::binary);
  if (!in)
    return;
  in.seekg(static_cast<std::streamoff>(offsets_[index]));
  if (!in)
    return;
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  offsets_[index] += text.size();
  auto& history = histories_[index];
  history.feed(text);
  auto& judged = judged_[index];
  judged = std::min(judged, history.figures().size());  // a resume dropped some
  // A job stopped at a rung reports none higher: the evaluations it makes before the stop takes
  // effect filled the higher rungs, and others were judged against them.
  for (; rungs_ && !stopped_[index] && judged < history.figures().size(); ++judged)
    stopped_[index] =
        rungs_->on_evaluation(index, history.steps()[judged] + 1, history.figures()[judged]);
}

void loser_watch::restart(std::size_t index) {
  histories_[index] = validation_history(figure_);
  offsets_[index] = 0;
  judged_[index] = 0;
}

void loser_watch::finished(std::size_t index, const std::string& metrics_path, bool succeeded) {
  if (!enabled())
    return;
  read(index, metrics_path);  // under asha, its last evaluations still fill the rungs
  if (!succeeded || !after_)
    return;
  if (const auto kth = histories_[index].at(*after_))
    finished_.push_back(*kth);
}

std::optional<std::string> loser_watch::verdict(std::size_t index) const {
  if (rungs_)
    return stopped_[index];
  if (!after_)
    return std::nullopt;
  const auto kth = histories_[index].at(*after_);
  if (!kth)
    return std::nullopt;
  return stop_loser_reason(*after_, *kth, finished_, figure_);
}

}  // namespace troupe
