#include "core/policy/pipeline_strategy.hpp"

#include "core/policy/replica_steps.hpp"

namespace troupe {

pipeline_strategy::pipeline_strategy(int64_t pipelines, int64_t stages, const step_rules& rules,
                                     int64_t first_step)
    : pipelines_(pipelines),
      stages_(stages),
      rules_(rules),
      step_(first_step),
      rounds_(static_cast<std::size_t>(stages), contribution_round(pipelines, "gradient")),
      losses_(static_cast<std::size_t>(pipelines)),
      reports_(pipelines * stages, first_step) {}

std::vector<int64_t> pipeline_strategy::stage_workers(int64_t stage,
                                                      const std::vector<int64_t>& pipelines) const {
  std::vector<int64_t> workers;
  for (auto p : pipelines)
    workers.push_back(p * stages_ + stage);
  return workers;
}

step_actions pipeline_strategy::start() {
  return {act::compute{step_, all_ranks(pipelines_ * stages_)}};
}

step_actions pipeline_strategy::next_step() {
  ++step_;
  return {act::compute{step_, all_ranks(pipelines_ * stages_)}};
}

step_actions pipeline_strategy::on_gradient(const arrival& a) {
  if (a.rank < 0 || a.rank >= pipelines_ * stages_ || a.step != step_)
    return {act::violation{"worker " + std::to_string(a.rank) + " sent a gradient for step " +
                           std::to_string(a.step) + ", expected step " + std::to_string(step_)}};
  const auto stage = a.rank % stages_;
  const auto pipeline = a.rank / stages_;
  auto r = rounds_[static_cast<std::size_t>(stage)].add(pipeline, a);
  if (!r.violation.empty())
    return {act::violation{r.violation}};
  if (stage + 1 == stages_)
    losses_[static_cast<std::size_t>(pipeline)] = {a.rank, a.loss, a.samples};
  if (!r.complete)
    return {};
  step_outcome outcome;  // stages never evaluate on their own: the driver starts it (d)
  outcome.step = a.step;
  outcome.last = rules_.is_last(a.step);
  return {act::combine{act::combine::what::gradients,
                       ranks_of(*r.complete),  // the stage's workers, in pipeline order
                       {},
                       stage_workers(stage, all_ranks(pipelines_)),
                       outcome}};
}

step_actions pipeline_strategy::on_report(const arrival& a) {
  if (a.step != step_)
    return {act::violation{"worker " + std::to_string(a.rank) + " reported step " +
                           std::to_string(a.step) + " during step " + std::to_string(step_)}};
  auto r = reports_.add(a);
  if (!r.violation.empty())
    return {act::violation{r.violation}};
  if (!r.complete)
    return {};
  step_actions out{act::complete{step_, losses_, std::nullopt}};
  if (rules_.evaluates_after(step_)) {
    evaluating_ = true;
    std::vector<int64_t> first_stages = stage_workers(0, all_ranks(pipelines_));
    out.push_back(act::evaluate{step_, std::move(first_stages)});
  }
  if (rules_.is_last(step_))
    out.push_back(act::training_done{});
  else if (!evaluating_)
    append(out, next_step());
  return out;
}

step_actions pipeline_strategy::on_evaluated(int64_t step) {
  if (!evaluating_ || step != step_)
    return {act::violation{"an evaluation after step " + std::to_string(step) +
                           " completed, none was asked for"}};
  evaluating_ = false;
  if (rules_.is_last(step_))
    return {};
  return next_step();
}

}  // namespace troupe
