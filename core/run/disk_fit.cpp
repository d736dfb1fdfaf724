#include "core/run/disk_fit.hpp"

#include "core/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace troupe {

double checkpoint_bytes(const run_plan& plan) {
  const auto& job = plan.job;
  const double flat = static_cast<double>(plan.model.flat_size());
  const double parameters = static_cast<double>(plan.model.parameters);
  const double states = static_cast<double>(job.optimizer.state_buffers());
  const double per_model = flat + states * parameters;  // weights and optimizer state
  double values = 0;
  if (plan.mode == run_mode::pipeline)  // pipeline 0's stages: one model, cut in parts
    values = per_model;
  else if (plan.mode == run_mode::ensemble)  // every member, no weights.pt
    values = static_cast<double>(job.ensemble.members) * per_model;
  else
    values = static_cast<double>(plan.checkpoint_parts()) * per_model;
  if (plan.mode != run_mode::ensemble)
    values += flat;  // weights.pt
  if (job.training.keep_best)
    values += flat;
  constexpr double files_and_headers = 64 << 10;  // state.json, the archives' own records
  return values * 4 + files_and_headers;
}

int64_t checkpoints_at_most(const run_plan& plan) {
  const auto& c = plan.job.checkpoint;
  if (!c.enabled())
    return 0;
  int64_t written = c.keep;  // by time: as many as the run lasts; keep bounds them
  // After every every_steps-th step but the last (core/checkpoint/checkpoint_schedule): it
  // counted one more, and the plan said "at most 4" of a run that wrote 2.
  if (c.every_steps > 0 && c.every_s <= 0)
    written = (plan.rules.total_steps() - 1) / c.every_steps;
  return std::min(c.keep, written) + 1;
}

double disk_free_bytes(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto path = fs::absolute(folder, ec);
  while (!ec && !path.empty() && !fs::exists(path, ec) && path != path.parent_path())
    path = path.parent_path();
  const auto space = fs::space(path, ec);
  return ec ? -1 : static_cast<double>(space.available);
}

double bytes_under(const std::string& folder) {
  namespace fs = std::filesystem;
  double bytes = 0;
  std::error_code ec;
  fs::recursive_directory_iterator it(folder, ec);  // links are not followed
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code size_error;
    if (it->is_regular_file(size_error)) {
      const auto size = it->file_size(size_error);
      if (!size_error)
        bytes += static_cast<double>(size);
    }
  }
  return bytes;
}

void check_checkpoints_fit(const run_plan& plan, const std::string& folder, double free_bytes) {
  const auto count = checkpoints_at_most(plan);
  const double each = checkpoint_bytes(plan);
  if (count == 0 || free_bytes < 0 || each * static_cast<double>(count) <= free_bytes)
    return;
  constexpr double mb = 1e6;
  throw job_error({fmt::format(
      "/checkpoint: {} checkpoints of about {:.1f} MB each (the newest {} kept, one more while "
      "the next is written) need {:.1f} MB, more than {} has free ({:.1f} MB): lower "
      "checkpoint.keep, checkpoint less often, or free space",
      count, each / mb, count - 1, each * static_cast<double>(count) / mb, folder,
      free_bytes / mb)});
}

}  // namespace troupe
