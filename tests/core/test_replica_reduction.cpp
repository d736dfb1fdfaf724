// The in-process reduction of sync replicas: threads meeting at a step barrier and summing
// slices of each other's gradient buffers, checked against sum_in_order bit for bit, and a
// barrier that a failed party aborts.
#include "core/collective/replica_reduction.hpp"
#include "core/collective/step_barrier.hpp"
#include "core/collective/sum_in_order.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace troupe;
using namespace std::chrono_literals;

namespace {

// Runs `body(rank)` on `n` threads; rethrows nothing (bodies record their own results).
template <class Body>
void on_threads(int64_t n, Body body) {
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < n; ++r)
    threads.emplace_back([&body, r] { body(r); });
  for (auto& t : threads)
    t.join();
}

}  // namespace

TEST_SUITE("collective") {
  TEST_CASE("reduction slices cover the buffer, each starting on a 64-byte boundary") {
    for (int64_t ranks : {1, 2, 3, 4, 7})
      for (int64_t numel : {0, 1, 15, 16, 17, 1000, 235146}) {
        const auto slices = reduction_slices(numel, ranks);
        REQUIRE(static_cast<int64_t>(slices.size()) == ranks);
        int64_t next = 0;
        for (const auto& s : slices) {
          CHECK(s.offset == next);
          CHECK(s.count >= 0);
          CHECK((s.offset % 16 == 0 || s.count == 0));
          next = s.offset + s.count;
        }
        CHECK(next == numel);
      }
    CHECK_THROWS_AS(reduction_slices(10, 0), std::invalid_argument);
  }

  TEST_CASE("no party passes the barrier before every party has arrived, round after round") {
    for (auto spin : {0us, 200us})
      for (int64_t n : {1, 2, 3, 5}) {
        step_barrier barrier(n, spin);
        std::atomic<int64_t> arrivals{0};
        std::atomic<bool> early{false};
        constexpr int64_t rounds = 300;
        on_threads(n, [&](int64_t party) {
          for (int64_t round = 0; round < rounds; ++round) {
            arrivals.fetch_add(1);
            barrier.arrive_and_wait(party);
            if (arrivals.load() < (round + 1) * n)
              early = true;
            barrier.arrive_and_wait(party);  // nobody starts the next round's count too soon
          }
        });
        CHECK(!early.load());
        CHECK(arrivals.load() == rounds * n);
      }
  }

  TEST_CASE("an aborted barrier releases its waiters and refuses later arrivals with the reason") {
    for (auto spin : {0us, 200us}) {
      step_barrier barrier(3, spin);
      std::atomic<int> aborted{0};
      std::string reason;
      std::thread waiter_a([&] {
        try {
          barrier.arrive_and_wait(0);
        } catch (const barrier_aborted& e) {
          reason = e.what();
          ++aborted;
        }
      });
      std::thread waiter_b([&] {
        try {
          barrier.arrive_and_wait(1);
        } catch (const barrier_aborted&) {
          ++aborted;
        }
      });
      std::this_thread::sleep_for(20ms);  // both are waiting (spun out, or sleeping)
      barrier.abort("replica 2 failed");
      barrier.abort("a later reason is not kept");
      waiter_a.join();
      waiter_b.join();
      CHECK(aborted.load() == 2);
      CHECK(reason == "replica 2 failed");
      CHECK_THROWS_AS(barrier.arrive_and_wait(2), barrier_aborted);
    }
    CHECK_THROWS_AS(step_barrier(0, 0us), std::invalid_argument);
    CHECK_THROWS_AS(step_barrier(2, 0us).arrive_and_wait(2), std::invalid_argument);
  }

  TEST_CASE("a spin budget stays at its limit while waits are short and shrinks while long") {
    spin_budget b(200us);
    CHECK(b.now() == 200us);
    b.record(30us);
    CHECK(b.now() == 200us);
    b.record(5ms);  // the others were descheduled: spinning would have burnt the core
    CHECK(b.now() == 100us);
    b.record(5ms);
    b.record(5ms);
    CHECK(b.now() == 25us);
    b.record(80us);  // ended soon after the budget: spin that long next time, twice over
    CHECK(b.now() == 160us);
    b.record(100us);
    CHECK(b.now() == 200us);
    spin_budget none(0us);
    none.record(1us);
    CHECK(none.now() == 0us);
  }

  TEST_CASE("replicas summing slices in shared memory get sum_in_order's bits, step after step") {
    for (int64_t n : {1, 2, 3, 4})
      for (int64_t numel : {1, 17, 1000, 4099}) {
        replica_reduction reduction(n, numel, n <= 2 ? 200us : 0us);
        std::vector<at::Tensor> buffers;
        for (int64_t r = 0; r < n; ++r)
          buffers.push_back(at::zeros({numel}));
        constexpr int64_t steps = 20;
        std::vector<std::vector<at::Tensor>> inputs(steps);
        for (int64_t s = 0; s < steps; ++s)
          for (int64_t r = 0; r < n; ++r)
            inputs[static_cast<std::size_t>(s)].push_back(at::randn({numel}));
        std::vector<std::vector<at::Tensor>> results(steps, std::vector<at::Tensor>(n));
        on_threads(n, [&](int64_t r) {
          auto& mine = buffers[static_cast<std::size_t>(r)];
          reduction.attach(r, mine);
          for (int64_t s = 0; s < steps; ++s) {
            mine.copy_(inputs[static_cast<std::size_t>(s)][static_cast<std::size_t>(r)]);
            reduction.all_reduce(r);
            results[static_cast<std::size_t>(s)][static_cast<std::size_t>(r)] = mine.clone();
          }
        });
        for (int64_t s = 0; s < steps; ++s) {
          const auto expected = sum_in_order(inputs[static_cast<std::size_t>(s)]);
          for (int64_t r = 0; r < n; ++r)
            REQUIRE(at::equal(results[static_cast<std::size_t>(s)][static_cast<std::size_t>(r)],
                              expected));
        }
      }
  }

  TEST_CASE("a reduction refuses a buffer of another size, dtype or rank, and one attached twice") {
    replica_reduction reduction(2, 10, 0us);
    CHECK_THROWS_AS(reduction.attach(0, at::zeros({11})), std::invalid_argument);
    CHECK_THROWS_AS(reduction.attach(0, at::zeros({10}, at::kDouble)), std::invalid_argument);
    CHECK_THROWS_AS(reduction.attach(2, at::zeros({10})), std::invalid_argument);
    CHECK_THROWS_AS(reduction.attach(0, at::zeros({2, 5})), std::invalid_argument);
    reduction.attach(0, at::zeros({10}));
    CHECK_THROWS_AS(reduction.attach(0, at::zeros({10})), std::invalid_argument);
  }

  TEST_CASE("a replica waiting for a failed one is released when the reduction is aborted") {
    replica_reduction reduction(2, 100, 200us);
    auto buffer = at::ones({100});
    reduction.attach(0, buffer);
    std::atomic<bool> released{false};
    std::thread waiter([&] {
      try {
        reduction.all_reduce(0);
      } catch (const barrier_aborted&) {
        released = true;
      }
    });
    std::this_thread::sleep_for(20ms);
    reduction.abort("replica 1 failed");
    waiter.join();
    CHECK(released.load());
    CHECK(at::equal(buffer, at::ones({100})));  // nothing was summed into it
  }

  TEST_CASE("a failing replica's wait for the others' reports ends when they are all in") {
    replica_reduction reduction(3, 16, 0us);
    CHECK(reduction.last_reported(1) == -1);
    reduction.reported(0, 4);
    reduction.reported(1, 4);
    CHECK(reduction.last_reported(1) == 4);
    CHECK(!reduction.await_reports(4, 0ms));  // rank 2 has not reported step 4: gives up
    CHECK(reduction.await_reports(3, 0ms) == false);
    std::thread late([&] { reduction.reported(2, 4); });
    CHECK(reduction.await_reports(4, 10s));  // returns once rank 2's report is in
    late.join();
    CHECK(reduction.await_reports(3, 0ms));  // later steps count for earlier ones
    CHECK_THROWS_AS(reduction.last_reported(3), std::out_of_range);
  }
}
