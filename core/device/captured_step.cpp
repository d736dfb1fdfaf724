#include "core/device/captured_step.hpp"

#include <stdexcept>
#include <utility>

namespace troupe {

struct captured_step::recording {
  std::unique_ptr<step_graph> graph;
  work step_work;                   ///< a replay reruns it where the graph reruns code (tests)
  std::vector<at::Tensor> inputs;   ///< refilled before each replay
  std::vector<at::Tensor> outputs;  ///< written by each replay
  double variant = 0;
};

captured_step::captured_step(device_transfer& transfer) : transfer_(transfer) {}

captured_step::~captured_step() = default;

bool captured_step::fits(const std::vector<at::Tensor>& inputs, double variant) const {
  if (recorded_->variant != variant || recorded_->inputs.size() != inputs.size())
    return false;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (recorded_->inputs[i].sizes() != inputs[i].sizes() ||
        recorded_->inputs[i].dtype() != inputs[i].dtype())
      return false;
  return true;
}

std::vector<at::Tensor> captured_step::run(const std::vector<at::Tensor>& inputs, double variant,
                                           const work& step_work) {
  if (eager_steps_ < warmup_steps || (recorded_ && !fits(inputs, variant))) {
    ++eager_steps_;
    return step_work(inputs);
  }
  if (!recorded_) {
    // The inputs the recording reads are its own, allocated before the capture; the tensors the
    // work allocates (activations, the loss) come from the graph's private pool and stay.
    auto r = std::make_unique<recording>();
    for (const auto& input : inputs)
      r->inputs.push_back(input.clone());
    r->variant = variant;
    r->step_work = step_work;
    r->graph = transfer_.new_step_graph();
    if (!r->graph)
      throw std::logic_error("captured_step: the device records no graphs");
    auto* kept = r.get();
    r->graph->capture([kept] { kept->outputs = kept->step_work(kept->inputs); });
    recorded_ = std::move(r);
  } else {
    for (std::size_t i = 0; i < inputs.size(); ++i)
      recorded_->inputs[i].copy_(inputs[i]);
  }
  recorded_->graph->replay();
  ++replayed_steps_;
  return recorded_->outputs;
}

void captured_step::forget() {
  recorded_.reset();
}

std::unique_ptr<captured_step> make_captured_step(device_transfer* transfer) {
  if (transfer == nullptr || transfer->new_step_graph() == nullptr)
    return nullptr;
  return std::make_unique<captured_step>(*transfer);
}

}  // namespace troupe
