// The loader that gathers batches ahead of a worker's steps: the batches are the gather's own,
// in step order; an unexpected step (redone, resumed, a new share) restarts it there; a gather
// that throws throws at the step that needed it; it stops cleanly however busy it is.
#include "core/data/batch_loader.hpp"
#include "core/errors.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>

using namespace troupe;

namespace {

loaded_batch batch_of(int64_t step) {
  return {step, at::full({2, 3}, static_cast<double>(step)), at::full({2}, step, at::kLong)};
}

}  // namespace

TEST_SUITE("data") {
  TEST_CASE("the loader hands out the gather's batches in step order, made ahead") {
    std::atomic<int64_t> gathered{0};
    batch_loader loader(
        [&](int64_t step) {
          ++gathered;
          return batch_of(step);
        },
        3);
    for (int64_t step = 5; step < 25; ++step) {
      auto [batch, waited] = loader.take(step);
      CHECK(batch.step == step);
      CHECK(at::equal(batch.images, batch_of(step).images));
      CHECK(at::equal(batch.labels, batch_of(step).labels));
      CHECK(waited >= 0);
    }
    // It works ahead, but no further than its depth.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (gathered < 23 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(gathered == 23);
  }

  TEST_CASE("a step the loader did not expect restarts it there") {
    batch_loader loader(batch_of, 2);
    CHECK(loader.take(0).first.step == 0);
    CHECK(loader.take(1).first.step == 1);
    CHECK(loader.take(1).first.step == 1);  // redone after a lost node
    CHECK(loader.take(7).first.step == 7);  // resumed further on
    CHECK(loader.take(8).first.step == 8);
    loader.restart();  // a new share: what was made is for the old one
    CHECK(loader.take(9).first.step == 9);
    CHECK(loader.take(3).first.step == 3);
  }

  TEST_CASE("what the gather throws is thrown at the step that needed it, not before") {
    std::atomic<bool> broken{true};
    batch_loader loader(
        [&](int64_t step) {
          if (step == 3 && broken)
            throw data_error("x.npy: row 12 holds a NaN or an infinity");
          return batch_of(step);
        },
        4);
    CHECK(loader.take(0).first.step == 0);
    CHECK(loader.take(1).first.step == 1);
    CHECK(loader.take(2).first.step == 2);
    CHECK_THROWS_WITH_AS(loader.take(3), "x.npy: row 12 holds a NaN or an infinity", data_error);
    broken = false;  // taken again, it is gathered again
    CHECK(loader.take(3).first.step == 3);
    CHECK(loader.take(4).first.step == 4);
  }

  TEST_CASE("after a failed gather, the step after it is gathered afresh, not waited for") {
    batch_loader loader(
        [](int64_t step) {
          if (step == 1)
            throw data_error("bad row");
          return batch_of(step);
        },
        2);
    CHECK(loader.take(0).first.step == 0);
    // Step 1 fails in the loader; a worker that skips it (a resumed run) must not hang.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(loader.take(2).first.step == 2);
  }

  TEST_CASE("a loader stops and joins its thread however busy it is") {
    for (int round = 0; round < 20; ++round) {
      batch_loader loader(
          [](int64_t step) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            return batch_of(step);
          },
          2);
      if (round % 2 == 0)
        loader.take(round);
    }
    batch_loader never_used(batch_of, 2);
  }
}
