// Your arrays as data, at any size: `"data": {"type": "npy", "train": {"x": "x.npy", "y":
// "y.npy"}, "test": {...}}`, files as numpy.save writes them, each one file or a list of its
// shards in order (x and y may be cut at different rows; their totals must agree).
//   x: float32, float16 or uint8 [N, ...]; [N, 28, 28] and [N, 784] become [N, 1, 28, 28], what
//      the built-in models take. The files are memory-mapped, never read whole: a step reads its
//      batch's rows (uint8 scaled by 1/255, float16 widened) and a row holding a NaN or an
//      infinity fails the run when a step first reads it, naming the file and the row.
//   y: int64 or int32 [N] class labels, or float32 or float64 [N, ...] targets: read into memory
//      and checked whole like every format's targets (core/data/targets.hpp).
// The plan reads x's headers and y; every message names the file and what is wrong.
#pragma once

#include "core/data/dataset.hpp"
#include "core/job/job_config.hpp"

namespace troupe {

/// Both splits, their x files mapped (no validation rows held out yet). Throws data_error.
dataset load_npy_arrays(const npy_files& train, const npy_files& test);

}  // namespace troupe
