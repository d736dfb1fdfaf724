// The divergence rule (core/train/divergence_watch.hpp): a loss that is not a number at once,
// or one that stays above 10 x the first for 50 steps in a row; a dip below resets the count.
#include "core/train/divergence_watch.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace troupe;

TEST_SUITE("run_pieces") {
  TEST_CASE("divergence: non-finite at once, far above the first loss for a whole window") {
    divergence_watch nan_watch;
    CHECK_FALSE(nan_watch.on_step(0, 2.3));
    const auto nan = nan_watch.on_step(1, std::numeric_limits<double>::quiet_NaN());
    REQUIRE(nan);
    CHECK(*nan == "loss is nan at step 1");
    CHECK(*divergence_watch(10, 50).on_step(2, -std::nan("")) == "loss is nan at step 2");
    CHECK(divergence_watch().on_step(0, INFINITY));  // even the first step

    divergence_watch w(10, 5);
    CHECK_FALSE(w.on_step(0, 2.0));
    for (int64_t s = 1; s <= 4; ++s)
      CHECK_FALSE(w.on_step(s, 25.0));  // above 20, four in a row
    CHECK_FALSE(w.on_step(5, 19.0));    // a dip: the count starts again
    for (int64_t s = 6; s <= 9; ++s)
      CHECK_FALSE(w.on_step(s, 25.0));
    const auto high = w.on_step(10, 30.0);
    REQUIRE(high);
    CHECK(*high == "loss 30 at step 10, above 10 x the first step's 2 for 5 steps");

    divergence_watch zero(10, 1);  // a first loss of 0 has no multiple: only non-finite counts
    CHECK_FALSE(zero.on_step(0, 0.0));
    CHECK_FALSE(zero.on_step(1, 1e6));
  }
}
