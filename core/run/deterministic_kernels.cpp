#include "core/run/deterministic_kernels.hpp"

#include <ATen/Context.h>

#include <cstdlib>

namespace troupe {

deterministic_kernels::deterministic_kernels(bool on) : on_(on) {
  if (!on_)
    return;
  auto& context = at::globalContext();
  algorithms_ = context.deterministicAlgorithms();
  warn_only_ = context.deterministicAlgorithmsWarnOnly();
  cudnn_deterministic_ = context.deterministicCuDNN();
  cudnn_benchmark_ = context.benchmarkCuDNN();
  tf32_cudnn_ = context.allowTF32CuDNN();
  tf32_cublas_ = context.allowTF32CuBLAS();
  // Only where the user has not chosen: cuBLAS reads it once, at its first handle.
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  context.setDeterministicAlgorithms(true, /*warn_only=*/true);
  context.setDeterministicCuDNN(true);
  context.setBenchmarkCuDNN(false);
  context.setAllowTF32CuDNN(false);
  context.setAllowTF32CuBLAS(false);
}

deterministic_kernels::~deterministic_kernels() {
  if (!on_)
    return;
  auto& context = at::globalContext();
  context.setDeterministicAlgorithms(algorithms_, warn_only_);
  context.setDeterministicCuDNN(cudnn_deterministic_);
  context.setBenchmarkCuDNN(cudnn_benchmark_);
  context.setAllowTF32CuDNN(tf32_cudnn_);
  context.setAllowTF32CuBLAS(tf32_cublas_);
}

}  // namespace troupe
