// A worker's state as it goes to the run driver and back: the weights an evaluation used (keep
// best, early stopping), a checkpoint's part, and a checkpoint's state handed back at a resume.
//
//   worker -> driver  (snapshot_atom, evaluated_weights)    after an evaluation the driver asked
//   worker -> driver  (checkpoint_atom, checkpoint_part)    after a step a checkpoint follows
//   driver -> worker  (restore_atom, restored_state)        a resumed run, before its first step
#pragma once

#include "messages/tensor_wire.hpp"

#include <ATen/core/Tensor.h>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>

namespace troupe {

/// The weights evaluated after `step`: part 0 (a replica, the parameter server) or a stage.
struct evaluated_weights {
  int64_t step = 0;
  int64_t part = 0;
  at::Tensor weights;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, evaluated_weights& x) {
  return f(caf::meta::type_name("evaluated_weights"), x.step, x.part, x.weights);
}

/// One part of the checkpoint after `step` (core/checkpoint/run_checkpoint's part_state).
struct checkpoint_part {
  int64_t step = 0;
  int64_t part = 0;
  at::Tensor weights;     ///< flat, on the host
  std::string optimizer;  ///< its optimizer's state as bytes
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_part& x) {
  return f(caf::meta::type_name("checkpoint_part"), x.step, x.part, x.weights, x.optimizer);
}

/// The state a worker takes back at a resume: the weights and optimizer after `step`.
struct restored_state {
  int64_t step = 0;
  at::Tensor weights;
  std::string optimizer;
  /// local_sgd with compression: the last average, which a replica's changes travel against
  /// (undefined: none yet, hand in whole).
  at::Tensor average_base;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, restored_state& x) {
  return f(caf::meta::type_name("restored_state"), x.step, x.weights, x.optimizer, x.average_base);
}

}  // namespace troupe
