// The job key `deterministic`: LibTorch's kernels chosen so that a rerun on the same GPU gives
// the same bits (PyTorch's "reproducibility" settings, for the length of one run).
//
// On: deterministic algorithms (a kernel without a deterministic version warns once instead of
// stopping the run), cuDNN's deterministic convolutions with autotuning off, TF32 off for cuDNN
// and cuBLAS (so that GPU weights stay within float32 rounding of the CPU's), and cuBLAS's
// fixed workspace (CUBLAS_WORKSPACE_CONFIG=:4096:8, read when its first handle is made: where
// the process has already used cuBLAS with another setting, the environment wins and the run
// may not repeat bitwise). Off: nothing is touched. The settings are process-wide; the guard
// puts back what it found when the run ends.
#pragma once

namespace troupe {

class deterministic_kernels {
 public:
  explicit deterministic_kernels(bool on);
  ~deterministic_kernels();
  deterministic_kernels(const deterministic_kernels&) = delete;
  deterministic_kernels& operator=(const deterministic_kernels&) = delete;

 private:
  bool on_;
  bool algorithms_ = false, warn_only_ = false, cudnn_deterministic_ = false,
       cudnn_benchmark_ = false, tf32_cudnn_ = false, tf32_cublas_ = false;
};

}  // namespace troupe
