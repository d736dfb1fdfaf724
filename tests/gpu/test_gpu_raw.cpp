// The CUDA/NCCL boundary without LibTorch: how status codes become messages (no GPU needed),
// and an NCCL group of one rank per visible GPU summing in place (GPU needed).
#include "gpu/cuda_check.hpp"
#include "gpu/nccl_comm.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <thread>
#include <vector>

using namespace troupe::gpu;

namespace {

std::string message_of(void (*f)()) {
  try {
    f();
  } catch (const gpu_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_SUITE("gpu_errors") {
  TEST_CASE("a CUDA status becomes a message naming the actor and the call") {
    CHECK_NOTHROW(check_cuda(cudaSuccess, "cudaMemcpy", "worker 2"));
    CHECK(message_of([] { check_cuda(cudaErrorInvalidValue, "cudaMemcpy", "worker 2"); }) ==
          "worker 2: cudaMemcpy: invalid argument (cudaErrorInvalidValue)");
  }

  TEST_CASE("an NCCL status becomes a message naming the actor and the call") {
    CHECK_NOTHROW(check_nccl(ncclSuccess, "ncclAllReduce", "worker 0"));
    const auto m = message_of([] { check_nccl(ncclInvalidArgument, "ncclAllReduce", "worker 1"); });
    CHECK(m.rfind("worker 1: ncclAllReduce: invalid argument", 0) == 0);
  }

  TEST_CASE("a malformed NCCL id or rank is refused before NCCL sees it") {
    CHECK(message_of([] { nccl_comm("short", 0, 1, 0, "worker 0"); }) ==
          "worker 0: an NCCL id has 128 bytes, got 5");
    CHECK(message_of([] { nccl_comm(std::string(128, '\0'), 2, 2, 0, "worker 2"); }) ==
          "worker 2: NCCL rank 2 of 2 is out of range");
  }

  TEST_CASE("counting GPUs never throws: CUDA's count, or 0 where CUDA cannot count") {
    int count = 0;
    const bool driver = cudaGetDeviceCount(&count) == cudaSuccess;
    CHECK(visible_cuda_devices() == (driver ? count : 0));
    CHECK(visible_cuda_devices() == (driver ? count : 0));  // the same when asked again
  }
}

TEST_SUITE("gpu_nccl") {
  TEST_CASE("one rank per visible GPU sums in place") {
    const int ranks = visible_cuda_devices();
    REQUIRE(ranks > 0);
    const auto id = make_nccl_id("test");
    const std::size_t n = 1 << 20;
    std::vector<float> results(static_cast<std::size_t>(ranks));
    std::vector<std::string> errors(static_cast<std::size_t>(ranks));
    std::vector<std::thread> members;
    for (int r = 0; r < ranks; ++r)
      members.emplace_back([&, r] {
        const std::string who = "rank " + std::to_string(r);
        try {
          nccl_comm comm(id, r, ranks, r, who);
          float* data = nullptr;
          check_cuda(cudaMalloc(&data, n * sizeof(float)), "cudaMalloc", who);
          std::vector<float> host(n, static_cast<float>(r + 1));
          check_cuda(cudaMemcpy(data, host.data(), n * sizeof(float), cudaMemcpyHostToDevice),
                     "cudaMemcpy", who);
          comm.all_reduce_sum(data, n, nullptr);
          check_cuda(cudaMemcpy(host.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost),
                     "cudaMemcpy", who);
          cudaFree(data);
          results[static_cast<std::size_t>(r)] = host[n - 1];
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
        }
      });
    for (auto& m : members)
      m.join();
    for (const auto& e : errors)
      CHECK_MESSAGE(e.empty(), e);
    for (float v : results)
      CHECK(v == doctest::Approx(ranks * (ranks + 1) / 2.0));
  }
}
