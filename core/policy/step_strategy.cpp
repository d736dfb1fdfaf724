#include "core/policy/step_strategy.hpp"

namespace troupe {

step_actions step_strategy::unexpected(const std::string& what) const {
  return {act::violation{what + ", which the " + std::string(name()) + " policy does not expect"}};
}

step_actions step_strategy::on_gradient(const arrival& a) {
  return unexpected("worker " + std::to_string(a.rank) + " sent a gradient for step " +
                    std::to_string(a.step));
}

step_actions step_strategy::on_weights(const arrival& a) {
  return unexpected("worker " + std::to_string(a.rank) + " sent weights to average after step " +
                    std::to_string(a.step));
}

step_actions step_strategy::on_push(const arrival& a, double) {
  return unexpected("worker " + std::to_string(a.rank) + " pushed a gradient for step " +
                    std::to_string(a.step));
}

step_actions step_strategy::on_report(const arrival&) {
  return {};  // timings are the driver's to record; most policies decide nothing on them
}

step_actions step_strategy::on_evaluated(int64_t) {
  return {};
}

step_actions step_strategy::on_worker_left(int64_t rank) {
  return {act::cannot_continue{rank}};
}

step_actions step_strategy::close_through(int64_t) {
  return {};
}

step_actions step_strategy::resume(const std::vector<int64_t>&, int64_t after_step) {
  return unexpected("a regroup after step " + std::to_string(after_step));
}

step_actions step_strategy::on_worker_joined(int64_t rank, double) {
  return unexpected("worker " + std::to_string(rank) + " joined");
}

}  // namespace troupe
