// What a run will hold in memory, held against the machine before anything is built: the
// physical memory its model copies take, and the address space the whole process maps, which
// `ulimit -v` (RLIMIT_AS) may bound. A run past that limit did not fail cleanly: 256 replicas
// under `ulimit -v 8000000` took 20 steps, then some 250 threads livelocked inside OpenBLAS's
// buffer allocation, whose mapping failed (issue 39, row 3). Refused at plan time instead.
//
// Thread safety: pure functions of their inputs.
#pragma once

#include "core/data/data_source.hpp"
#include "core/device/device_plan.hpp"
#include "core/job/job_config.hpp"

#include <cstdint>

namespace troupe {

/// Weights, gradients and optimizer state of every model copy the run holds, and the initial
/// weights they start from, in bytes.
double model_state_bytes(const job_config& job, double parameters);

/// Throws job_error when model_state_bytes exceeds the machine's physical memory.
void check_model_fits(const job_config& job, double parameters, const device_inventory& inventory);

/// What a step's activations hold at their peak, in bytes: `per_row` values (the layers'
/// outputs for one row, model_facts) for every row in flight, kept from the forward for the
/// backward, with their gradients and temporaries beside them. 0 where per_row is (unknown).
double activation_bytes(const job_config& job, int64_t per_row);

/// Throws job_error when the model state and a step's activations exceed physical memory.
void check_step_fits(const job_config& job, double parameters, int64_t per_row,
                     const device_inventory& inventory);

/// Throws job_error when the rows Fashion-MNIST's headers declare would not fit in physical
/// memory once loaded.
void check_data_fits(const job_config& job, const data_facts& data,
                     const device_inventory& inventory);

/// The address space a process running `threads` compute threads over `parameters` and `data`
/// maps, in bytes, by part, estimated from what `troupe run` was measured to map
/// (memory_fit.cpp).
struct address_space_parts {
  double threads = 0;  ///< the libraries, and each thread's stack and BLAS buffers
  double model = 0;    ///< model_state_bytes
  double activations = 0;
  double data = 0;  ///< the rows as float32
  double total() const { return threads + model + activations + data; }
};
address_space_parts address_space_of(const job_config& job, double parameters,
                                     const data_facts& data, int64_t threads,
                                     int64_t activations_per_row = 0);

/// Throws job_error when the estimate exceeds the process's address-space limit
/// (inventory.address_space_bytes; 0: no limit, no check).
void check_address_space(const job_config& job, double parameters, const data_facts& data,
                         int64_t threads, const device_inventory& inventory,
                         int64_t activations_per_row = 0);

}  // namespace troupe
