// Benchmark (GPU machines): NCCL all-reduce of float32 buffers of 16 and 128 MB among one rank
// per visible GPU (threads of this process, as troupe's GPU replicas are), median of 10 after
// 3 warm-up rounds. Prints one JSON object per size: algorithm bandwidth bytes / time and bus
// bandwidth 2(N - 1)/N x bytes / time (NCCL's convention; 0 with one rank, which only copies).
#include "gpu/cuda_check.hpp"
#include "gpu/nccl_comm.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

using namespace troupe::gpu;

namespace {

constexpr int warmup = 3;
constexpr int timed = 10;

// Seconds of each timed round, on rank `rank`.
std::vector<double> member(const std::string& id, int rank, int ranks, std::size_t floats) {
  const std::string who = "rank " + std::to_string(rank);
  nccl_comm comm(id, rank, ranks, rank, who);
  float* buffer = nullptr;
  check_cuda(cudaMalloc(&buffer, floats * sizeof(float)), "cudaMalloc", who);
  check_cuda(cudaMemset(buffer, 0, floats * sizeof(float)), "cudaMemset", who);
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate", who);
  std::vector<double> seconds;
  for (int round = 0; round < warmup + timed; ++round) {
    const auto start = std::chrono::steady_clock::now();
    comm.all_reduce_sum(buffer, floats, stream);
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize", who);
    if (round >= warmup)
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  cudaStreamDestroy(stream);
  cudaFree(buffer);
  return seconds;
}

}  // namespace

int main() {
  try {
    const int ranks = visible_cuda_devices();
    if (ranks == 0)
      throw gpu_error("no CUDA device is visible");
    for (const std::size_t mb : {16, 128}) {
      const std::size_t bytes = mb << 20;
      const auto id = make_nccl_id("bench");
      std::vector<std::vector<double>> times(static_cast<std::size_t>(ranks));
      std::vector<std::string> errors(static_cast<std::size_t>(ranks));
      std::vector<std::thread> members;
      for (int r = 0; r < ranks; ++r)
        members.emplace_back([&, r] {
          try {
            times[static_cast<std::size_t>(r)] = member(id, r, ranks, bytes / sizeof(float));
          } catch (const std::exception& e) {
            errors[static_cast<std::size_t>(r)] = e.what();
          }
        });
      for (auto& m : members)
        m.join();
      for (const auto& e : errors)
        if (!e.empty())
          throw gpu_error(e);
      // A round lasts as long as its slowest rank.
      std::vector<double> rounds(timed, 0.0);
      for (const auto& t : times)
        for (int i = 0; i < timed; ++i)
          rounds[static_cast<std::size_t>(i)] = std::max(rounds[static_cast<std::size_t>(i)], t[i]);
      std::sort(rounds.begin(), rounds.end());
      const double median = (rounds[timed / 2 - 1] + rounds[timed / 2]) / 2;
      const double algbw = static_cast<double>(bytes) / median / 1e9;
      nlohmann::json out = {{"benchmark", "nccl_allreduce"},
                            {"ranks", ranks},
                            {"mb", mb},
                            {"median_s", median},
                            {"algbw_gb_s", algbw},
                            {"busbw_gb_s", algbw * 2.0 * (ranks - 1) / ranks}};
      std::printf("%s\n", out.dump().c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nccl_allreduce_bench: %s\n", e.what());
    return 1;
  }
}
