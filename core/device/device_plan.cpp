#include "core/device/device_plan.hpp"

#include "core/errors.hpp"

#include <set>

namespace troupe {

namespace {

std::string visible_text(int n) {
  return n == 1
             ? "1 CUDA device (cuda:0)"
             : std::to_string(n) + " CUDA devices (cuda:0 to cuda:" + std::to_string(n - 1) + ")";
}

// The driver sums a stage's gradients over the pipelines on that stage's device: stage s of
// every pipeline must be on one GPU (a pipeline's stages may each have their own).
void check_pipeline_devices(const std::vector<device_spec>& workers, std::size_t stages) {
  std::vector<std::string> problems;
  for (std::size_t w = stages; w < workers.size(); ++w)
    if (!(workers[w] == workers[w % stages]))
      problems.push_back("/device/" + std::to_string(w) + ": stage " + std::to_string(w % stages) +
                         " of every pipeline runs on one GPU (the " +
                         "coordinator sums its gradients there), but worker " + std::to_string(w) +
                         " is on " + workers[w].str() + " and worker " +
                         std::to_string(w % stages) + " on " + workers[w % stages].str());
  if (!problems.empty())
    throw job_error(std::move(problems));
}

}  // namespace

device_plan make_device_plan(const job_config& job, const device_inventory& inventory) {
  const auto workers = static_cast<std::size_t>(job.parallelism.replicas * job.parallelism.stages);
  device_plan plan;
  if (!job.on_cuda()) {
    plan.workers.assign(workers, device_spec{});
    return plan;
  }
  const auto asked = job.device.size() == 1 ? job.device.front().str() : std::string("cuda");
  if (!inventory.cuda_built)
    throw job_error({"/device: asks for " + asked +
                     ", but this build of troupe has no CUDA: it was built against a CPU-only "
                     "LibTorch or without NCCL (docs/gpus.md)"});
  if (inventory.cuda_devices <= 0)
    throw job_error({"/device: asks for " + asked +
                     ", but no CUDA device is visible to this process (check the driver and "
                     "CUDA_VISIBLE_DEVICES)"});
  // Workers are numbered pipeline-major (worker r * stages + s); an unnumbered "cuda" deals
  // replicas, or a pipeline's stages, over the visible GPUs in turn.
  const bool pipelined = job.parallelism.pipelined();
  const auto stages = static_cast<std::size_t>(job.parallelism.stages);
  std::vector<std::string> problems;
  for (std::size_t w = 0; w < workers; ++w) {
    const auto& asked_w = job.device[job.device.size() == 1 ? 0 : w];
    device_spec d = asked_w;
    if (!d.index)
      d.index = static_cast<int>((pipelined ? w % stages : w) %
                                 static_cast<std::size_t>(inventory.cuda_devices));
    if (*d.index >= inventory.cuda_devices) {
      const auto where = job.device.size() == 1 ? "/device" : "/device/" + std::to_string(w);
      problems.push_back(where + ": " + asked_w.str() + " is not visible: this process sees " +
                         visible_text(inventory.cuda_devices));
      if (job.device.size() == 1)
        break;
    }
    plan.workers.push_back(d);
  }
  if (!problems.empty())
    throw job_error(std::move(problems));
  if (pipelined) {
    check_pipeline_devices(plan.workers, stages);
    return plan;
  }
  std::set<int> distinct;
  for (const auto& d : plan.workers)
    distinct.insert(*d.index);
  if (distinct.size() == workers && workers > 1)
    plan.gpu_each = true;
  else if (distinct.size() > 1)
    throw job_error(
        {"/device: sync replicas sum gradients either on one shared GPU or with "
         "NCCL, one replica per GPU; these " +
         std::to_string(workers) + " replicas share some of " + std::to_string(distinct.size()) +
         " GPUs"});
  return plan;
}

std::string render_device_plan(const device_plan& plan) {
  const auto& w = plan.workers;
  if (w.empty())
    return "cpu";
  bool same = true;
  for (const auto& d : w)
    same = same && d == w.front();
  if (same && w.size() == 1)
    return w.front().str();
  if (same)
    return w.front().str() + " (all " + std::to_string(w.size()) + " workers)";
  std::string out;
  for (const auto& d : w)
    out += (out.empty() ? "" : " ") + d.str();
  return out;
}

}  // namespace troupe
