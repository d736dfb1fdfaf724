// The built-in networks the benchmarks train, by the name their --model option takes.
#pragma once

#include "core/job/job_config.hpp"

#include <string>

namespace troupe::bench {

/// "cnn": configs/fashion_cnn_sync.json's network; otherwise the MLP 784-256-128-10.
inline model_config bench_model(const std::string& name) {
  model_config m;
  if (name == "cnn") {
    m.kind = model_kind::cnn;
    m.channels = {16, 32};
    m.kernel_size = 5;
    m.hidden = {128};
  } else {
    m.hidden = {256, 128};
  }
  return m;
}

}  // namespace troupe::bench
