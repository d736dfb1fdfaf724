// The ring all-reduce: its chunk plan and its state machine, driven by a simulated ring whose
// links deliver in order but interleave at random.
#include "core/collective/ring_allreduce.hpp"
#include "core/collective/sum_in_order.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <deque>
#include <numeric>
#include <random>

using namespace troupe;

namespace {

// Runs one all-reduce among buffers.size() ranks; returns the elements each rank sent.
std::vector<int64_t> simulate(std::vector<at::Tensor>& buffers, int64_t bucket_elements,
                              std::mt19937& rng, int64_t window = 2) {
  const auto n = static_cast<int64_t>(buffers.size());
  std::vector<ring_allreduce> ranks;
  for (int64_t r = 0; r < n; ++r)
    ranks.emplace_back(r, n, ring_options{bucket_elements, window});
  std::vector<std::deque<ring_message>> link(buffers.size());  // link[r]: into rank r
  std::vector<int64_t> sent(buffers.size(), 0);
  const auto post = [&](int64_t from, ring_message m) {
    sent[static_cast<std::size_t>(from)] += m.chunk.numel();
    link[static_cast<std::size_t>((from + 1) % n)].push_back(std::move(m));
  };
  for (int64_t r = 0; r < n; ++r)
    for (auto& m : ranks[static_cast<std::size_t>(r)].start(buffers[static_cast<std::size_t>(r)]))
      post(r, std::move(m));
  for (;;) {
    std::vector<int64_t> ready;
    for (int64_t r = 0; r < n; ++r)
      if (!link[static_cast<std::size_t>(r)].empty())
        ready.push_back(r);
    if (ready.empty())
      break;
    const auto r = ready[std::uniform_int_distribution<std::size_t>(0, ready.size() - 1)(rng)];
    auto& in = link[static_cast<std::size_t>(r)];
    auto m = std::move(in.front());
    in.pop_front();
    for (auto& next : ranks[static_cast<std::size_t>(r)].on_receive(m))
      post(r, std::move(next));
  }
  for (const auto& r : ranks)
    REQUIRE(r.done());
  return sent;
}

}  // namespace

TEST_SUITE("collective") {
  TEST_CASE("chunks cover the buffer evenly, the first numel % n one larger") {
    const auto c = ring_chunks(10, 4);
    REQUIRE(c.size() == 4);
    CHECK(c[0].offset == 0);
    CHECK(c[0].count == 3);
    CHECK(c[1].count == 3);
    CHECK(c[2].count == 2);
    CHECK(c[3].offset == 8);
    CHECK(c[3].count == 2);
    CHECK(ring_chunks(2, 3)[2].count == 0);
    CHECK_THROWS_AS(ring_chunks(5, 0), std::invalid_argument);
    CHECK_THROWS_AS(ring_step_of(3, 3, 0), std::invalid_argument);
    CHECK_THROWS_AS(ring_step_of(0, 3, 4), std::invalid_argument);
  }

  TEST_CASE("each chunk is reduced once by every rank and then gathered by every rank") {
    for (int64_t n = 2; n <= 6; ++n) {
      // Follow every chunk's contributions through the plan symbolically.
      std::vector<std::vector<std::vector<int>>> has(
          static_cast<std::size_t>(n), std::vector<std::vector<int>>(static_cast<std::size_t>(n)));
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < n; ++c)
          has[r][c] = {static_cast<int>(r)};
      for (int64_t step = 0; step < ring_step_count(n); ++step) {
        auto next = has;
        for (int64_t r = 0; r < n; ++r) {
          const auto from = (r + n - 1) % n;
          const auto s_from = ring_step_of(from, n, step);
          const auto s = ring_step_of(r, n, step);
          REQUIRE(s_from.send_chunk == s.recv_chunk);
          auto incoming = has[from][s.recv_chunk];
          if (s.reduce)
            next[r][s.recv_chunk].insert(next[r][s.recv_chunk].end(), incoming.begin(),
                                         incoming.end());
          else
            next[r][s.recv_chunk] = incoming;
        }
        has = next;
      }
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < n; ++c) {
          auto got = has[r][c];
          std::sort(got.begin(), got.end());
          std::vector<int> all(static_cast<std::size_t>(n));
          std::iota(all.begin(), all.end(), 0);
          REQUIRE(got == all);
        }
    }
  }

  TEST_CASE("every rank sends 2(n-1)/n of the buffer") {
    for (int64_t n = 1; n <= 8; ++n)
      for (int64_t r = 0; r < n; ++r)
        CHECK(ring_elements_sent(r, n, 840) == 2 * (n - 1) * 840 / n);
  }

  TEST_CASE("the ring sums like sum_in_order, under any interleaving, with buckets") {
    std::mt19937 rng(11);
    for (int64_t n : {1, 2, 3, 4, 7})
      for (int64_t numel : {0, 1, 5, 1000, 4099})
        for (auto [bucket, window] :
             {std::pair<int64_t, int64_t>{int64_t{1} << 30, 2}, {333, 1}, {333, 2}, {100, 3}}) {
          at::manual_seed(static_cast<uint64_t>(n * 10000 + numel));
          std::vector<at::Tensor> buffers, originals;
          for (int64_t r = 0; r < n; ++r) {
            buffers.push_back(at::randn({numel}));
            originals.push_back(buffers.back().clone());
          }
          const auto expected = sum_in_order(originals);
          const auto sent = simulate(buffers, bucket, rng, window);
          for (int64_t r = 0; r < n; ++r) {
            const auto& b = buffers[static_cast<std::size_t>(r)];
            REQUIRE(at::allclose(b, expected, 1e-5, 1e-6));
            // Every rank ends with the same bits, whatever order its additions came in.
            REQUIRE(at::equal(b, buffers[0]));
            if (bucket > numel)
              CHECK(sent[static_cast<std::size_t>(r)] == ring_elements_sent(r, n, numel));
          }
          if (n == 2)  // two addends: a + b == b + a exactly
            CHECK(at::equal(buffers[0], expected));
        }
  }

  TEST_CASE("a message the plan does not expect is refused, not summed") {
    ring_allreduce r(1, 3, ring_options{1 << 20, 8});
    auto first = r.start(at::ones({9}));
    REQUIRE(first.size() == 1);
    CHECK(first[0].step == 0);
    CHECK(first[0].chunk.numel() == 3);
    CHECK_THROWS_WITH_AS(r.on_receive({0, 1, at::ones({3})}), doctest::Contains("expected step 0"),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(r.on_receive({2, 0, at::ones({3})}), doctest::Contains("bucket 2"),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(r.on_receive({0, 0, at::ones({4})}), doctest::Contains("3 float"),
                         std::runtime_error);
    CHECK_THROWS_AS(r.on_receive({0, 0, at::ones({3}, at::kDouble)}), std::runtime_error);
    CHECK_THROWS_AS(r.on_receive({0, 0, at::Tensor()}), std::runtime_error);
    CHECK_THROWS_AS(r.start(at::ones({9})), std::logic_error);
    CHECK(r.on_receive({0, 0, at::ones({3})}).size() == 1);  // the right one still works
    ring_allreduce idle(0, 2, ring_options{4, 8});
    CHECK_THROWS_AS(idle.on_receive({0, 0, at::ones({1})}), std::runtime_error);
    CHECK_THROWS_AS(idle.start(at::ones({2, 2})), std::invalid_argument);
  }

  TEST_CASE("an all-gather chunk may be read straight into the buffer, a reduce chunk may not") {
    // Rank 0 of 2: step 0 reduces (it must add what comes), step 1 gathers (it only copies).
    ring_allreduce r(0, 2, ring_options{1 << 20, 8});
    auto buffer = at::zeros({4});
    r.start(buffer);
    CHECK_FALSE(r.landing_for(0, 0).defined());  // a reduce step
    CHECK_FALSE(r.landing_for(0, 1).defined());  // not the step expected next
    CHECK_FALSE(r.landing_for(3, 0).defined());  // no such bucket
    r.on_receive({0, 0, at::ones({2})});
    auto landing = r.landing_for(0, 1);
    REQUIRE(landing.defined());
    CHECK(landing.numel() == 2);
    landing.fill_(5.0f);  // what a transport reads in
    auto out = r.on_receive({0, 1, landing});
    CHECK(out.empty());
    CHECK(r.done());
    // One chunk holds the reduced sum (0 + 1), the other what was read into place.
    CHECK(at::equal(std::get<0>(at::sort(buffer)), at::tensor({1.0f, 1.0f, 5.0f, 5.0f})));
    CHECK(landing.data_ptr() >= buffer.data_ptr());  // a view of the buffer, not a copy
    CHECK_FALSE(r.landing_for(0, 1).defined());      // nothing more to come
  }
}
