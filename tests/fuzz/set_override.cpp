// Fuzz target: `--set PATH=VALUE` assignments, one a line, applied as `troupe validate` applies
// them to the job file it read, then the result validated, written back and planned as a job
// file is (fuzz_common). The base is a small valid job, or a small suite when the first line is
// exactly "--suite".
#include "core/config/overrides.hpp"
#include "core/config/parse_job.hpp"
#include "core/errors.hpp"
#include "tests/fuzz/fuzz_common.hpp"

#include <ATen/Parallel.h>

namespace {

const char* const base_job = R"({
  "name": "fuzz", "seed": 1,
  "model": {"type": "mlp", "hidden": [16]},
  "data": {"type": "synthetic", "train_samples": 256, "test_samples": 64},
  "optimizer": {"type": "sgd", "lr": 0.05},
  "training": {"steps": 4, "batch_size": 32},
  "parallelism": {"policy": "sync", "replicas": 2}
})";

const char* const base_suite = R"({
  "name": "fuzzsuite",
  "model": {"type": "mlp", "hidden": [8]},
  "data": {"type": "synthetic", "train_samples": 128, "test_samples": 32},
  "training": {"steps": 2, "batch_size": 16},
  "jobs": [{"name": "a"}, {"name": "b", "optimizer": {"type": "adam"}}],
  "sweep": {"seed": [1, 2]}
})";

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  at::set_num_threads(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = troupe::fuzz::as_text(data, size);
  std::vector<std::string> lines;
  for (std::size_t start = 0; start <= text.size();) {
    auto end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  const bool suite = !lines.empty() && lines.front() == "--suite";
  auto json = nlohmann::json::parse(suite ? base_suite : base_job);
  // As load_job_json: every assignment is tried, and any refusal refuses the command line.
  bool refused = false;
  for (std::size_t i = suite ? 1 : 0; i < lines.size(); ++i) {
    try {
      troupe::apply_override(json, lines[i]);
    } catch (const troupe::job_error&) {
      refused = true;
    }
  }
  if (!refused)
    troupe::fuzz::check_job_json(json);
  return 0;
}
