#include "core/suite/placement.hpp"

#include "core/errors.hpp"

#include <stdexcept>

namespace troupe {
namespace {

bool matches(const placement_request& r, const device_offer& d) {
  if (r.device == "cuda")
    return d.name.rfind("cuda:", 0) == 0;
  return r.device == d.name;
}

}  // namespace

std::optional<std::string> unplaceable(const std::vector<device_offer>& devices,
                                       const placement_request& request) {
  int64_t largest = -1;
  for (const auto& d : devices)
    if (matches(request, d))
      largest = std::max(largest, d.threads);
  if (largest < 0)
    return "asks for device \"" + request.device + "\", which no entry of devices offers";
  if (largest < request.threads)
    return "needs " + std::to_string(request.threads) + " threads on " + request.device +
           ", the largest such device offers " + std::to_string(largest);
  return std::nullopt;
}

placement_queue::placement_queue(std::vector<device_offer> devices,
                                 std::vector<placement_request> jobs, int64_t max_concurrent)
    : devices_(std::move(devices)),
      jobs_(std::move(jobs)),
      max_concurrent_(max_concurrent),
      states_(jobs_.size(), state::queued),
      device_of_(jobs_.size(), 0) {
  for (const auto& d : devices_)
    free_threads_.push_back(d.threads);
  std::vector<std::string> problems;
  for (std::size_t j = 0; j < jobs_.size(); ++j)
    if (auto why = unplaceable(devices_, jobs_[j]))
      problems.push_back("/jobs/" + std::to_string(j) + ": " + *why);
  if (!problems.empty())
    throw job_error(std::move(problems));
}

std::vector<placement> placement_queue::start_ready() {
  std::vector<placement> started;
  for (std::size_t j = 0; j < jobs_.size(); ++j) {
    if (static_cast<int64_t>(running_) >= max_concurrent_)
      break;
    if (states_[j] != state::queued)
      continue;
    for (std::size_t d = 0; d < devices_.size(); ++d) {
      if (!matches(jobs_[j], devices_[d]) || free_threads_[d] < jobs_[j].threads)
        continue;
      free_threads_[d] -= jobs_[j].threads;
      states_[j] = state::running;
      device_of_[j] = d;
      ++running_;
      started.push_back({j, d});
      break;
    }
  }
  return started;
}

void placement_queue::finished(std::size_t job) {
  if (job >= jobs_.size() || states_[job] != state::running)
    throw std::logic_error("placement_queue: job " + std::to_string(job) + " was not running");
  states_[job] = state::done;
  free_threads_[device_of_[job]] += jobs_[job].threads;
  --running_;
  ++done_;
}

}  // namespace troupe
