// The reduction through a shared-memory segment between processes of one host: ranks that
// each map the segment themselves (threads standing in for processes: every rank has its own
// mapping, as a process would), a real child process that dies while the others wait, and
// segments that are not the run's.
#include "core/collective/host_reduction.hpp"
#include "core/collective/sum_in_order.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

using namespace troupe;
using namespace std::chrono_literals;

namespace {

host_segment_spec spec_of(int64_t ranks, int64_t numel) {
  return {new_segment_name(), ranks, numel, new_segment_nonce()};
}

bool name_exists(const std::string& name) {
  return std::filesystem::exists("/dev/shm" + name);
}

}  // namespace

TEST_SUITE("collective") {
  TEST_CASE("ranks with their own mappings of a segment get sum_in_order's bits, step by step") {
    // Odd ranks keep their gradient in their slot (as a node's replica does), even ones pass a
    // buffer of their own: both ways sum alike.
    for (int64_t n : {1, 2, 3, 4})
      for (int64_t numel : {1, 17, 4099}) {
        const auto spec = spec_of(n, numel);
        std::vector<std::unique_ptr<host_reduction>> ranks;
        ranks.push_back(host_reduction::create(spec));
        for (int64_t r = 1; r < n; ++r)
          ranks.push_back(host_reduction::open(spec));
        ranks.front()->unlink();  // every rank has it open: the name may go
        CHECK(!name_exists(spec.name));
        constexpr int64_t steps = 10;
        std::vector<std::vector<at::Tensor>> inputs(steps), results(steps);
        for (int64_t s = 0; s < steps; ++s)
          for (int64_t r = 0; r < n; ++r) {
            inputs[s].push_back(at::randn({numel}));
            results[s].push_back(at::Tensor());
          }
        std::vector<std::thread> threads;
        for (int64_t r = 0; r < n; ++r)
          threads.emplace_back([&, r] {
            ranks[r]->set_spin(n <= 2 ? 100us : 0us);
            for (int64_t s = 0; s < steps; ++s) {
              auto buffer = r % 2 == 1 ? ranks[r]->slot_tensor(r) : at::empty({numel});
              buffer.copy_(inputs[s][r]);
              ranks[r]->all_reduce(r, buffer);
              results[s][r] = buffer.clone();
            }
          });
        for (auto& t : threads)
          t.join();
        for (int64_t s = 0; s < steps; ++s)
          for (int64_t r = 0; r < n; ++r)
            REQUIRE(at::equal(results[s][r], sum_in_order(inputs[s])));
      }
  }

  TEST_CASE("a segment that is not there, or not this run's, is refused, naming it") {
    const auto spec = spec_of(2, 100);
    CHECK_THROWS_WITH_AS(host_reduction::open(spec), doctest::Contains(spec.name.c_str()),
                         std::runtime_error);
    auto made = host_reduction::create(spec);
    CHECK(name_exists(spec.name));
    CHECK_THROWS_AS(host_reduction::create(spec), std::runtime_error);  // exists already
    auto other_nonce = spec;
    other_nonce.nonce ^= 1;
    CHECK_THROWS_WITH_AS(host_reduction::open(other_nonce),
                         doctest::Contains("not the one this run made"), std::runtime_error);
    auto other_size = spec;
    other_size.numel = 101;
    CHECK_THROWS_AS(host_reduction::open(other_size), std::runtime_error);
    CHECK_THROWS_AS(host_reduction::create({"no-slash", 2, 10, 1}), std::invalid_argument);
    auto opened = host_reduction::open(spec);
    CHECK_THROWS_AS(opened->all_reduce(2, at::zeros({100})), std::invalid_argument);
    CHECK_THROWS_AS(opened->all_reduce(1, at::zeros({99})), std::invalid_argument);
    made.reset();  // the creator removes the name
    CHECK(!name_exists(spec.name));
  }

  TEST_CASE("a host's sum, summed across hosts by the leaders, reaches every rank by broadcast") {
    // Two hosts of three ranks each, step after step: every rank sums in its host's segment,
    // the leaders (slot 0) add the other host's sum (what the socket ring between them does),
    // then each leader broadcasts. Every rank ends with (a + b + c) + (d + e + f).
    constexpr int64_t per_host = 3, numel = 1031, steps = 8;
    const auto spec_a = spec_of(per_host, numel), spec_b = spec_of(per_host, numel);
    std::vector<std::unique_ptr<host_reduction>> a, b;
    for (int64_t r = 0; r < per_host; ++r) {
      a.push_back(r == 0 ? host_reduction::create(spec_a) : host_reduction::open(spec_a));
      b.push_back(r == 0 ? host_reduction::create(spec_b) : host_reduction::open(spec_b));
    }
    std::vector<std::vector<at::Tensor>> inputs(steps), results(steps);
    for (auto& s : inputs)
      for (int64_t r = 0; r < 2 * per_host; ++r)
        s.push_back(at::randn({numel}));
    for (auto& s : results)
      s.resize(2 * per_host);
    // The leaders meet here between their host's sum and their broadcast.
    std::vector<at::Tensor> host_sums(2);
    std::atomic<int> arrived{0}, left{0};
    const auto leaders_meet = [&](int host, const at::Tensor& sum, int64_t step) {
      host_sums[host] = sum.clone();
      arrived.fetch_add(1);
      while (arrived.load() < 2 * (step + 1))
        std::this_thread::yield();
      sum.copy_(host_sums[0] + host_sums[1]);
      left.fetch_add(1);
      while (left.load() < 2 * (step + 1))  // neither leader overwrites a sum the other reads
        std::this_thread::yield();
    };
    std::vector<std::thread> threads;
    for (int host = 0; host < 2; ++host)
      for (int64_t r = 0; r < per_host; ++r)
        threads.emplace_back([&, host, r] {
          auto& segment = host == 0 ? *a[r] : *b[r];
          segment.set_spin(0us);
          for (int64_t s = 0; s < steps; ++s) {
            auto buffer = r == 1 ? segment.slot_tensor(r) : at::empty({numel});
            buffer.copy_(inputs[s][host * per_host + r]);
            segment.all_reduce(r, buffer);
            if (r == 0)
              leaders_meet(host, buffer, s);
            segment.broadcast(r, buffer, 0);
            results[s][host * per_host + r] = buffer.clone();
          }
        });
    for (auto& t : threads)
      t.join();
    for (int64_t s = 0; s < steps; ++s) {
      const std::vector<at::Tensor> first(inputs[s].begin(), inputs[s].begin() + per_host);
      const std::vector<at::Tensor> second(inputs[s].begin() + per_host, inputs[s].end());
      const auto expected = sum_in_order(first) + sum_in_order(second);
      for (const auto& got : results[s])
        REQUIRE(at::equal(got, expected));
    }
    CHECK_THROWS_AS(a[0]->broadcast(0, at::empty({numel}), per_host), std::invalid_argument);
  }

  TEST_CASE("an abort in one process releases the ranks waiting in another") {
    const auto spec = spec_of(3, 64);
    auto a = host_reduction::create(spec);
    auto b = host_reduction::open(spec);
    auto c = host_reduction::open(spec);
    std::atomic<int> released{0};
    std::string reason;
    std::thread waiter([&] {
      try {
        a->all_reduce(0, at::ones({64}));
      } catch (const barrier_aborted& e) {
        reason = e.what();
        ++released;
      }
    });
    std::this_thread::sleep_for(30ms);
    b->abort("replica 1 failed");  // through the segment: `a` is another mapping
    waiter.join();
    CHECK(released.load() == 1);
    CHECK(reason == "another process gave up the shared-memory reduction");
    CHECK_THROWS_WITH_AS(b->all_reduce(1, at::ones({64})), "replica 1 failed", barrier_aborted);
    CHECK_THROWS_AS(c->all_reduce(2, at::ones({64})), barrier_aborted);
  }

  TEST_CASE("a rank whose process died does not keep the others waiting") {
    const auto spec = spec_of(2, 64);
    auto mine = host_reduction::create(spec);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // Rank 1 arrives at the first barrier and waits there until it is killed.
      try {
        auto theirs = host_reduction::open(spec);
        auto buffer = at::ones({64});
        theirs->all_reduce(1, buffer);
      } catch (...) {
      }
      ::_exit(0);
    }
    std::this_thread::sleep_for(200ms);  // the child is waiting, its pid recorded
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(mine->all_reduce(0, at::ones({64})), doctest::Contains("is gone"),
                         barrier_aborted);
    CHECK(std::chrono::steady_clock::now() - start < 5s);
  }
}
