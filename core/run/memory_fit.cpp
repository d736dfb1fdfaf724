#include "core/run/memory_fit.hpp"

#include "core/errors.hpp"

#include <fmt/format.h>

#include <functional>
#include <numeric>

namespace troupe {
namespace {

constexpr double gib = 1 << 30;
constexpr double mib = 1 << 20;

// What `troupe run` mapped (VmPeak) training the MLP 784-1024-10 at batch 256 on synthetic data,
// by replicas of one thread each, on the 2-core development machine: 1.7 GiB with 1, 2.9 with
// 8, 5.3 with 32, 7.7 with 64, 17.3 with 128, 33.9 with 256. The libraries, LibTorch's and CAF's
// start-up and malloc's first arenas take the base; past 64 replicas each thread added about
// 136 MiB: its 8 MiB stack, OpenBLAS's buffer for its calls, its share of malloc's arenas. The
// estimate errs high (64 replicas: 10.5 GiB estimated), which only matters under `ulimit -v`.
constexpr double base_bytes = 2 * gib;
constexpr double per_thread_bytes = 136 * mib;
// A layer's output is kept from the forward for the backward, which makes gradients beside some
// of them: the built-in CNN's stacked ensemble at batch 64 peaked 12.7 MB a member above its
// model state (64 members against 1, resident), 1.12 times its 44,170 values a row as float32.
// Half as much again, to err high.
constexpr double activation_copies = 1.5;

// The data's rows (training, validation, test) and the values in each, as loaded.
double all_rows(const data_facts& data) {
  return static_cast<double>(data.train_rows + data.validation_rows + data.test_rows);
}

int64_t row_values(const data_facts& data) {
  return std::accumulate(data.row_shape.begin(), data.row_shape.end(), int64_t{1},
                         std::multiplies<>());
}

double data_values(const data_facts& data) {
  return all_rows(data) * static_cast<double>(row_values(data));
}

}  // namespace

double model_state_bytes(const job_config& job, double parameters) {
  const double states = static_cast<double>(job.optimizer.state_buffers());
  const double copies = job.ensemble.enabled() ? static_cast<double>(job.ensemble.members)
                                               : static_cast<double>(job.parallelism.replicas);
  // A stacked ensemble holds one more copy of its members: 4096 members of the default MLP
  // (963 million parameters, SGD with momentum) peaked at weights, gradients and momentum and
  // then asked for a fourth 3.3 GB (under `ulimit -v`, at its first step, where the plan had
  // passed it).
  const double working = job.ensemble.enabled() ? 1 : 0;
  // Each copy: weights, gradients, optimizer state; plus the initial weights all start from.
  return parameters * 4 * (copies * (2 + states + working) + 1);
}

void check_data_fits(const job_config& job, const data_facts& data,
                     const device_inventory& inventory) {
  // Only Fashion-MNIST's files are planned from their headers and loaded after (the others are
  // loaded to be planned, and npy arrays are mapped, not held): two gzip files of 2 MB declared
  // 2.7 million images each, 18 GiB once loaded, on a 24 GiB machine.
  if (job.data.kind != data_kind::fashion_mnist || inventory.memory_bytes <= 0)
    return;
  // The file's bytes, then the same as float32 rows.
  const double bytes = data_values(data) * 5;
  if (bytes <= inventory.memory_bytes)
    return;
  throw job_error({fmt::format(
      "/data: the files declare {:.0f} rows of {} values: {:.1f} GiB once loaded (as bytes, "
      "then as float32), more than this machine's {:.1f} GiB",
      all_rows(data), row_values(data), bytes / gib, inventory.memory_bytes / gib)});
}

void check_model_fits(const job_config& job, double parameters, const device_inventory& inventory) {
  const double bytes = model_state_bytes(job, parameters);
  if (inventory.memory_bytes <= 0 || bytes <= inventory.memory_bytes)
    return;
  const double copies = job.ensemble.enabled() ? static_cast<double>(job.ensemble.members)
                                               : static_cast<double>(job.parallelism.replicas);
  throw job_error({fmt::format(
      "/model: {:.0f} parameters: their weights, gradients and optimizer state for {:.0f} model "
      "copies need {:.1f} GiB, more than this machine's {:.1f} GiB",
      parameters, copies, bytes / gib, inventory.memory_bytes / gib)});
}

double activation_bytes(const job_config& job, int64_t per_row) {
  // A stacked ensemble runs every member's batch in one step; replicas and stages share the
  // global batch between them.
  const double rows = static_cast<double>(job.training.batch_size) *
                      (job.ensemble.enabled() ? static_cast<double>(job.ensemble.members) : 1);
  return static_cast<double>(per_row) * rows * 4 * activation_copies;
}

void check_step_fits(const job_config& job, double parameters, int64_t per_row,
                     const device_inventory& inventory) {
  const double state = model_state_bytes(job, parameters);
  const double activations = activation_bytes(job, per_row);
  if (inventory.memory_bytes <= 0 || state + activations <= inventory.memory_bytes)
    return;
  throw job_error({fmt::format(
      "/training/batch_size: a step of {:.0f} row(s){} holds about {:.1f} GiB of activations "
      "({} values a row) beside {:.1f} GiB of model state, more than this machine's {:.1f} GiB: "
      "lower batch_size{}",
      static_cast<double>(job.training.batch_size),
      job.ensemble.enabled() ? fmt::format(" for each of {} member(s)", job.ensemble.members) : "",
      activations / gib, per_row, state / gib, inventory.memory_bytes / gib,
      job.ensemble.enabled() ? " or ensemble.members" : "")});
}

address_space_parts address_space_of(const job_config& job, double parameters,
                                     const data_facts& data, int64_t threads,
                                     int64_t activations_per_row) {
  return {base_bytes + static_cast<double>(threads) * per_thread_bytes,
          model_state_bytes(job, parameters), activation_bytes(job, activations_per_row),
          data_values(data) * 4};
}

void check_address_space(const job_config& job, double parameters, const data_facts& data,
                         int64_t threads, const device_inventory& inventory,
                         int64_t activations_per_row) {
  if (inventory.address_space_bytes <= 0)
    return;
  const auto needed = address_space_of(job, parameters, data, threads, activations_per_row);
  if (needed.total() <= inventory.address_space_bytes)
    return;
  throw job_error({fmt::format(
      "/parallelism: {} compute thread(s) over {:.0f} parameters need about {:.1f} GiB of address "
      "space ({:.1f} for the threads' stacks and BLAS buffers and the libraries, {:.1f} for the "
      "model copies, {:.1f} for a step's activations, {:.1f} for the data), more than this "
      "process may map ({:.1f} GiB, ulimit -v): lower the largest (replicas or "
      "threads_per_replica, ensemble.members, batch_size), or raise the limit",
      threads, parameters, needed.total() / gib, needed.threads / gib, needed.model / gib,
      needed.activations / gib, needed.data / gib, inventory.address_space_bytes / gib)});
}

}  // namespace troupe
