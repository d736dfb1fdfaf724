// Batches: deterministic shuffling from the seed, and an even split across replicas in rank
// order that covers every row exactly once.
#include "core/data/batch_plan.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

#include <algorithm>

using namespace troupe;

TEST_SUITE("batch_plan") {
  TEST_CASE("shards are contiguous, in rank order, and as even as possible") {
    for (int64_t batch : {1, 7, 64, 128, 129}) {
      for (int64_t parts = 1; parts <= std::min<int64_t>(batch, 9); ++parts) {
        int64_t next = 0;
        for (int64_t r = 0; r < parts; ++r) {
          auto s = shard_of(batch, parts, r);
          CHECK(s.begin == next);
          CHECK((s.size() == batch / parts || s.size() == batch / parts + 1));
          next = s.end;
        }
        CHECK(next == batch);
      }
    }
    CHECK(shard_of(10, 3, 0).size() == 4);
    CHECK(shard_of(10, 3, 2).size() == 3);
  }

  TEST_CASE("a permutation is a permutation, fixed by its seed") {
    auto a = permutation(1000, 42);
    auto b = permutation(1000, 42);
    auto c = permutation(1000, 43);
    CHECK(a == b);
    CHECK(a != c);
    std::sort(a.begin(), a.end());
    for (int64_t i = 0; i < 1000; ++i)
      CHECK(a[static_cast<size_t>(i)] == i);
    // Pinned: the order (and so every run's data order) must not change between builds,
    // compilers or library versions.
    CHECK(permutation(10, 1) == std::vector<int64_t>{1, 7, 3, 9, 4, 0, 5, 2, 6, 8});
  }

  TEST_CASE("replica shards of a step together are the global batch") {
    batch_plan whole(100, 32, 5);
    auto global = whole.indices(4, {0, 32});
    batch_plan r0(100, 32, 5), r1(100, 32, 5);
    auto part0 = r0.indices(4, shard_of(32, 2, 0));
    auto part1 = r1.indices(4, shard_of(32, 2, 1));
    CHECK(at::equal(at::cat({part0, part1}), global));
  }

  TEST_CASE("an epoch visits every full batch of distinct samples; epochs differ") {
    batch_plan plan(100, 32, 9);
    CHECK(plan.steps_per_epoch() == 3);
    std::vector<int64_t> seen;
    for (int64_t s = 0; s < 3; ++s) {
      auto idx = plan.indices(s, {0, 32});
      seen.insert(seen.end(), idx.data_ptr<int64_t>(), idx.data_ptr<int64_t>() + 32);
    }
    std::sort(seen.begin(), seen.end());
    CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
    CHECK(!at::equal(plan.indices(0, {0, 32}), plan.indices(3, {0, 32})));
    CHECK(plan.epoch_of(3) == 1);
  }

  TEST_CASE("a train set smaller than one batch is refused") {
    CHECK_THROWS(batch_plan(10, 32, 0));
  }
}
