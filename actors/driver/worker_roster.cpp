#include "actors/driver/worker_roster.hpp"

namespace troupe {

worker_roster::worker_roster(int64_t workers, int64_t stages, std::vector<std::string> places)
    : stages_(stages), workers_(static_cast<std::size_t>(workers)), places_(std::move(places)) {}

void worker_roster::set(int64_t rank, caf::actor worker) {
  auto& slot = workers_.at(static_cast<std::size_t>(rank));
  if (!slot)
    ++joined_;
  slot = std::move(worker);
}

void worker_roster::set_place(int64_t rank, std::string place) {
  if (places_.size() < workers_.size())
    places_.resize(workers_.size());
  places_.at(static_cast<std::size_t>(rank)) = std::move(place);
}

int64_t worker_roster::rank_of(const caf::actor_addr& address) const {
  for (std::size_t i = 0; i < workers_.size(); ++i)
    if (workers_[i] && workers_[i].address() == address)
      return static_cast<int64_t>(i);
  return -1;
}

std::string worker_roster::place(int64_t rank) const {
  return rank >= 0 && rank < static_cast<int64_t>(places_.size())
             ? places_[static_cast<std::size_t>(rank)]
             : std::string();
}

std::string worker_roster::describe(int64_t rank) const {
  if (stages_ > 1)
    return "stage " + std::to_string(rank % stages_) + " of replica " +
           std::to_string(rank / stages_) + " (worker " + std::to_string(rank) + ")";
  auto name = "worker " + std::to_string(rank);
  if (!place(rank).empty())
    name += " (" + place(rank) + ")";
  return name;
}

}  // namespace troupe
