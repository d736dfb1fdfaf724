#include "apps/troupe/suite_watch.hpp"

#include <fstream>
#include <iterator>

namespace troupe {

loser_watch::loser_watch(std::optional<int64_t> after, std::size_t jobs)
    : after_(after), histories_(jobs), offsets_(jobs, 0) {}

void loser_watch::read(std::size_t index, const std::string& metrics_path) {
  if (!after_)
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
  histories_[index].feed(text);
}

void loser_watch::finished(std::size_t index, const std::string& metrics_path, bool succeeded) {
  if (!after_)
    return;
  read(index, metrics_path);
  if (!succeeded)
    return;
  if (const auto kth = histories_[index].at(*after_))
    finished_.push_back(*kth);
}

std::optional<std::string> loser_watch::verdict(std::size_t index) const {
  if (!after_)
    return std::nullopt;
  const auto kth = histories_[index].at(*after_);
  if (!kth)
    return std::nullopt;
  return stop_loser_reason(*after_, *kth, finished_);
}

}  // namespace troupe
