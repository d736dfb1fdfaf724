#include "core/run/node_fit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace troupe {
namespace {

template <class T>
std::string differs(const char* fact, const T& here, const T& planned) {
  if (here == planned)
    return "";
  return fmt::format("this node's data has {} {}, the coordinator's plan {}", fact, here, planned);
}

std::string shape(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

std::string targets_of(const data_facts& d) {
  return d.class_labels ? "int64 class labels" : "float targets";
}

std::string data_misfit(const data_facts& here, const data_facts& planned) {
  for (auto problem :
       {differs("training rows", here.train_rows, planned.train_rows),
        differs("validation rows", here.validation_rows, planned.validation_rows),
        differs("test rows", here.test_rows, planned.test_rows),
        differs("classes", here.classes, planned.classes),
        differs("rows of shape", shape(here.row_shape), shape(planned.row_shape)),
        differs("targets", targets_of(here), targets_of(planned)),
        differs("targets of shape", shape(here.target_shape), shape(planned.target_shape))})
    if (!problem.empty())
      return problem;
  return "";
}

std::string device_misfit(const device_plan& devices, const device_inventory& inventory) {
  for (const auto& d : devices.workers) {
    if (!d.is_cuda())
      continue;
    if (!inventory.cuda_built)
      return fmt::format("the plan computes on {}, but this node's troupe is built without CUDA",
                         d.str());
    if (d.index.value_or(0) >= inventory.cuda_devices)
      return fmt::format("the plan computes on {}, but this node sees {} GPU(s)", d.str(),
                         inventory.cuda_devices);
  }
  return "";
}

}  // namespace

std::string node_misfit(const run_plan& plan, const data_facts& here,
                        const device_inventory& inventory) {
  if (auto problem = data_misfit(here, plan.data); !problem.empty())
    return problem;
  return device_misfit(plan.devices, inventory);
}

}  // namespace troupe
