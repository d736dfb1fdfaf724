// The synchronous policy alone: arrivals in every order, protocol violations, departures.
#include "core/policy/sync_policy.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>

using namespace troupe;

TEST_SUITE("sync_policy") {
  TEST_CASE("a step completes only when every worker has arrived, contributors in rank order") {
    sync_policy p(3);
    CHECK(p.on_gradient(2, 0).kind == verdict::wait);
    CHECK(p.on_gradient(0, 0).kind == verdict::wait);
    auto d = p.on_gradient(1, 0);
    REQUIRE(d.kind == verdict::complete);
    CHECK(d.step == 0);
    CHECK(d.contributors == std::vector<std::size_t>{0, 1, 2});
    CHECK(p.step() == 1);
  }

  TEST_CASE("every arrival order of many workers gives the same decision") {
    constexpr std::size_t workers = 64;
    std::mt19937 rng(7);
    for (int trial = 0; trial < 200; ++trial) {
      sync_policy p(workers);
      std::vector<std::size_t> order(workers);
      std::iota(order.begin(), order.end(), 0);
      for (int64_t step = 0; step < 3; ++step) {
        std::shuffle(order.begin(), order.end(), rng);
        for (std::size_t i = 0; i + 1 < workers; ++i)
          REQUIRE(p.on_gradient(order[i], step).kind == verdict::wait);
        auto d = p.on_gradient(order.back(), step);
        REQUIRE(d.kind == verdict::complete);
        REQUIRE(d.step == step);
        REQUIRE(std::is_sorted(d.contributors.begin(), d.contributors.end()));
        REQUIRE(d.contributors.size() == workers);
      }
    }
  }

  TEST_CASE("a duplicate gradient is rejected and changes nothing") {
    sync_policy p(2);
    CHECK(p.on_gradient(0, 0).kind == verdict::wait);
    auto d = p.on_gradient(0, 0);
    CHECK(d.kind == verdict::rejected);
    CHECK(d.reason.find("second gradient") != std::string::npos);
    CHECK(p.on_gradient(1, 0).kind == verdict::complete);
  }

  TEST_CASE("a gradient for another step is rejected") {
    sync_policy p(2);
    auto ahead = p.on_gradient(0, 1);
    CHECK(ahead.kind == verdict::rejected);
    CHECK(ahead.reason.find("step 1 during step 0") != std::string::npos);
    CHECK(p.on_gradient(0, 0).kind == verdict::wait);
    CHECK(p.on_gradient(1, 0).kind == verdict::complete);
    CHECK(p.on_gradient(1, 0).kind == verdict::rejected);  // stale
  }

  TEST_CASE("an unknown worker is rejected") {
    sync_policy p(2);
    CHECK(p.on_gradient(2, 0).kind == verdict::rejected);
    CHECK(p.on_worker_left(5).kind == verdict::rejected);
  }

  TEST_CASE("a worker that leaves no longer blocks the step") {
    sync_policy p(3);
    CHECK(p.on_gradient(0, 0).kind == verdict::wait);
    CHECK(p.on_gradient(2, 0).kind == verdict::wait);
    auto d = p.on_worker_left(1);
    REQUIRE(d.kind == verdict::complete);
    CHECK(d.contributors == std::vector<std::size_t>{0, 2});
    CHECK(p.live_workers() == 2);
    CHECK(p.on_gradient(1, 1).kind == verdict::rejected);
    CHECK(p.on_worker_left(1).kind == verdict::rejected);
    CHECK(p.on_gradient(2, 1).kind == verdict::wait);
    CHECK(p.on_gradient(0, 1).kind == verdict::complete);
  }

  TEST_CASE("a departed worker's pending gradient is dropped") {
    sync_policy p(3);
    CHECK(p.on_gradient(1, 0).kind == verdict::wait);
    CHECK(p.on_worker_left(1).kind == verdict::wait);
    CHECK(p.on_gradient(0, 0).kind == verdict::wait);
    auto d = p.on_gradient(2, 0);
    REQUIRE(d.kind == verdict::complete);
    CHECK(d.contributors == std::vector<std::size_t>{0, 2});
  }

  TEST_CASE("when every worker has left there is nothing to complete") {
    sync_policy p(2);
    CHECK(p.on_worker_left(0).kind == verdict::wait);
    CHECK(p.on_worker_left(1).kind == verdict::wait);
    CHECK(p.live_workers() == 0);
  }
}
