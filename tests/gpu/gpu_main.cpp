// main() of the GPU test binaries. With --needs-gpu, a machine without a visible CUDA device
// skips (exit 77, which CTest reports as skipped) instead of failing: CI has no GPU.
#define DOCTEST_CONFIG_IMPLEMENT
#include "gpu/cuda_check.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  bool needs_gpu = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--needs-gpu")
      needs_gpu = true;
    else
      args.push_back(argv[i]);
  }
  if (needs_gpu && troupe::gpu::visible_cuda_devices() == 0) {
    std::puts("skipped: no CUDA device is visible to this process");
    return 77;
  }
  doctest::Context context(static_cast<int>(args.size()), args.data());
  return context.run();
}
