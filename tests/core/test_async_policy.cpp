// The asynchronous policy alone: staleness accounting, the stale-synchronous bound under random
// event orders of many workers, departures, and protocol violations.
#include "core/policy/async_policy.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>

using namespace troupe;
using kind = async_decision::kind;

TEST_SUITE("async_policy") {
  TEST_CASE("staleness counts the versions applied between pull and push") {
    async_policy p(2, std::nullopt);
    CHECK(p.on_pull(0).version == 0);
    CHECK(p.on_pull(1).version == 0);
    auto a = p.on_push(0);
    CHECK(a.staleness == 0);
    CHECK(a.version == 1);
    auto b = p.on_push(1);
    CHECK(b.staleness == 1);
    CHECK(b.version == 2);
    CHECK(p.clock(0) == 1);
  }

  TEST_CASE("a worker too far ahead waits and is released when the slowest catches up") {
    async_policy p(2, int64_t{1});
    for (int i = 0; i < 2; ++i) {
      REQUIRE(p.on_pull(0).what == kind::proceed);
      REQUIRE(p.on_push(0).what == kind::proceed);
    }
    auto w = p.on_pull(0);  // clock 2, slowest 0: 2 ahead, bound 1
    CHECK(w.what == kind::wait);
    CHECK(w.reason.find("2 steps ahead") != std::string::npos);
    CHECK(p.on_pull(1).what == kind::proceed);
    auto r = p.on_push(1);
    CHECK(r.released == std::vector<std::size_t>{0});
    CHECK(!p.is_waiting(0));
    CHECK(p.on_push(0).what == kind::proceed);  // it is computing since its release
  }

  TEST_CASE("max_staleness 0 keeps every worker on the same clock") {
    async_policy p(3, int64_t{0});
    CHECK(p.on_pull(0).what == kind::proceed);
    CHECK(p.on_push(0).what == kind::proceed);
    CHECK(p.on_pull(0).what == kind::wait);
    CHECK(p.on_pull(1).what == kind::proceed);
    CHECK(p.on_push(1).released.empty());  // worker 2 is still at clock 0
    CHECK(p.on_pull(2).what == kind::proceed);
    CHECK(p.on_push(2).released == std::vector<std::size_t>{0});
  }

  TEST_CASE("a departed worker blocks no one") {
    async_policy p(2, int64_t{0});
    CHECK(p.on_pull(0).what == kind::proceed);
    CHECK(p.on_push(0).what == kind::proceed);
    CHECK(p.on_pull(0).what == kind::wait);
    auto d = p.on_worker_left(1);
    CHECK(d.released == std::vector<std::size_t>{0});
    CHECK(p.on_pull(1).what == kind::rejected);
    CHECK(p.on_worker_left(1).what == kind::rejected);
  }

  TEST_CASE("protocol violations are rejected and change nothing") {
    async_policy p(1, std::nullopt);
    CHECK(p.on_push(0).what == kind::rejected);
    CHECK(p.on_pull(3).what == kind::rejected);
    CHECK(p.on_pull(0).what == kind::proceed);
    CHECK(p.on_pull(0).what == kind::rejected);
    CHECK(p.version() == 0);
  }

  TEST_CASE("random event orders: bound kept, each gradient applied once, never stuck") {
    for (uint32_t seed = 0; seed < 60; ++seed) {
      std::mt19937 rng(seed);
      const std::size_t workers = 2 + seed % 200;
      const std::optional<int64_t> bound =
          seed % 4 == 3 ? std::nullopt : std::optional<int64_t>(seed % 4);
      async_policy p(workers, bound);
      std::vector<int> pending(workers, 0);  // 0 idle, 1 computing, 2 waiting, 3 gone
      int64_t pushes = 0;
      auto check_start = [&](std::size_t w) {
        if (bound)
          REQUIRE(p.clock(w) - p.min_live_clock() <= *bound);
        pending[w] = 1;
      };
      for (int event = 0; event < 4000; ++event) {
        std::vector<std::size_t> runnable;
        for (std::size_t w = 0; w < workers; ++w)
          if (pending[w] == 0 || pending[w] == 1)
            runnable.push_back(w);
        const bool anyone_live =
            std::any_of(pending.begin(), pending.end(), [](int s) { return s != 3; });
        if (!anyone_live)
          break;
        REQUIRE_MESSAGE(!runnable.empty(), "deadlock with live workers, seed " << seed);
        const auto w = runnable[rng() % runnable.size()];
        if (rng() % 500 == 0) {  // a worker leaves
          auto d = p.on_worker_left(w);
          REQUIRE(d.what == kind::proceed);
          pending[w] = 3;
          for (auto r : d.released)
            check_start(r);
          continue;
        }
        if (pending[w] == 0) {
          auto d = p.on_pull(w);
          REQUIRE(d.what != kind::rejected);
          if (d.what == kind::wait)
            pending[w] = 2;
          else
            check_start(w);
        } else {
          auto d = p.on_push(w);
          REQUIRE(d.what == kind::proceed);
          REQUIRE(d.staleness >= 0);
          ++pushes;
          pending[w] = 0;
          for (auto r : d.released)
            check_start(r);
        }
        REQUIRE(p.version() == pushes);
      }
    }
  }
}
