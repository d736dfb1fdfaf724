// The pure pieces that decide when a checkpoint is taken and how far the workers run ahead: the
// checkpoint schedule, the release window (one by one and in blocks), the release pace, and a
// worker's pace.
#include "core/checkpoint/checkpoint_schedule.hpp"
#include "core/policy/step_pace.hpp"
#include "core/policy/step_release.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace troupe;

TEST_SUITE("checkpoint") {
  TEST_CASE("the schedule: every N steps, every T seconds, never after the last step") {
    checkpoint_config by_count;
    by_count.every_steps = 5;
    checkpoint_schedule count(by_count, 15, 0);
    std::vector<int64_t> due;
    for (int64_t s = 0; s < 15; ++s)
      if (count.due(s, 0))
        due.push_back(s);
    CHECK(due == std::vector<int64_t>{4, 9});  // not 14: the run ends there
    checkpoint_config by_time;
    by_time.every_s = 10;
    checkpoint_schedule time(by_time, 100, 2.0);
    CHECK_FALSE(time.due(0, 5));
    CHECK(time.due(1, 12.5));
    CHECK_FALSE(time.due(2, 20));
    CHECK(time.due(3, 22.5));
    CHECK_FALSE(checkpoint_config{}.enabled());
  }

  TEST_CASE("the release window: a few steps ahead, sliding on completion, stoppable") {
    step_release r(10, 4);
    CHECK(r.start(0) == std::vector<int64_t>{0, 1, 2, 3});
    CHECK(r.on_complete(0) == std::vector<int64_t>{4});
    CHECK(r.on_complete(1) == std::vector<int64_t>{5});
    CHECK(r.next() == 6);
    CHECK(r.release_last([](int64_t) { return true; }) == std::vector<int64_t>{6});
    CHECK(r.stopped());
    CHECK(r.on_complete(2).empty());
    step_release resumed(10, 4);
    CHECK(resumed.start(8) == std::vector<int64_t>{8, 9});
    CHECK(resumed.on_complete(8).empty());
    CHECK(resumed.release_last([](int64_t) { return true; }).empty());
    // Up to a step the run may stop after (not 7, 8: a fragment in flight there).
    step_release stop(10, 4);
    stop.start(0);
    stop.on_complete(0);
    stop.on_complete(1);
    CHECK(stop.release_last([](int64_t s) { return s != 6 && s != 7; }) ==
          std::vector<int64_t>{6, 7, 8});
    CHECK(stop.stopped());
    CHECK(stop.release_last([](int64_t) { return true; }).empty());
  }

  TEST_CASE("the release window in blocks: none until a block may go, never past the window") {
    step_release r(20, 8, 4);
    CHECK(r.start(0) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
    CHECK(r.on_complete(0).empty());  // 8 may go: one step, not a block
    CHECK(r.on_complete(1).empty());
    CHECK(r.on_complete(2).empty());
    CHECK(r.on_complete(3) == std::vector<int64_t>{8, 9, 10, 11});
    CHECK(r.on_complete(4).empty());
    // Completions reported late, several at once: the block covers them all, up to the window.
    CHECK(r.on_complete(9) == std::vector<int64_t>{12, 13, 14, 15, 16, 17});
    // The last steps go even when fewer than a block remain.
    CHECK(r.on_complete(13) == std::vector<int64_t>{18, 19});
    CHECK(r.next() == 20);
    CHECK(r.on_complete(17).empty());
    CHECK_THROWS_AS(step_release(20, 4, 5), std::invalid_argument);
    CHECK_THROWS_AS(step_release(20, 4, 0), std::invalid_argument);
  }

  TEST_CASE("the release pace follows the steps' length: blocks for short ones, else one by one") {
    CHECK(release_pace_for(0).block == 1);  // nothing measured yet
    CHECK(release_pace_for(0.001).block == release_block_steps);
    CHECK(release_pace_for(0.001).window == block_release_window);
    CHECK(release_pace_for(0.05).block == 1);
    CHECK(release_pace_for(0.05).window == release_window);
    // Slowing down: the window shrinks, and nothing goes until completions catch up with it.
    step_release r(100, 16, 8);
    CHECK(r.start(0).size() == 16);
    r.set_pace(4, 1);
    CHECK(r.on_complete(0).empty());
    CHECK(r.on_complete(11).empty());
    CHECK(r.on_complete(12) == std::vector<int64_t>{16});
    r.set_pace(16, 8);
    CHECK(r.on_complete(13).size() == 13);  // 17 .. 29
    CHECK(r.on_complete(14).empty());       // 30 may go: not a block
    CHECK_THROWS_AS(r.set_pace(4, 8), std::invalid_argument);
  }

  TEST_CASE("a worker's pace: only released steps run, announced checkpoints are reported") {
    step_pace p;
    CHECK_FALSE(p.may_start());
    p.release(0);
    p.release(1);
    CHECK(p.announce_checkpoint(1));
    REQUIRE(p.may_start());
    CHECK(p.begin() == 0);
    CHECK_FALSE(p.may_start());  // busy
    CHECK_FALSE(p.finish(0));
    CHECK(p.begin() == 1);
    CHECK(p.finish(1));
    CHECK_FALSE(p.may_start());             // step 2 was not released
    CHECK_FALSE(p.announce_checkpoint(1));  // passed: the driver broke the protocol
    step_pace resumed;
    resumed.start_at(7);
    resumed.release(7);
    CHECK(resumed.begin() == 7);
  }
}
