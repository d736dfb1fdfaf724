// The async policy as a pure strategy: pushes applied at once, the staleness bound holding
// workers back, exactly replicas x steps pushes handed out, and the pushes it must refuse.
#include "core/policy/async_strategy.hpp"

#include <algorithm>
#include <random>
#include <set>

#include "strategy_helpers.hpp"

#include <doctest/doctest.h>

using namespace troupe;
using namespace troupe::test;

TEST_SUITE("async_strategy") {
  // ---- async --------------------------------------------------------------------------------

  TEST_CASE("async, bound 0: pushes are applied, the early pusher waits for the other") {
    const step_rules rules(3, 3, 2);  // evaluates after steps 1 and 2 (the last)
    async_strategy s(2, int64_t{0}, false, rules);
    CHECK(std::string(s.name()) == "async");

    auto out = s.start();
    REQUIRE(kinds(out) == "hand_out hand_out");
    for (int64_t r = 0; r < 2; ++r) {
      const auto& h = as<act::hand_out>(out[static_cast<std::size_t>(r)]);
      CHECK(h.rank == r);
      CHECK(h.version == 0);
      CHECK(h.step == 0);
    }

    // Rank 0 pushes first: applied at once; it may not start step 1 before rank 1 finishes 0.
    out = s.on_push(arr(0, 0, 0.5, 8), 1.0);
    REQUIRE(kinds(out) == "apply_push");
    {
      const auto& a = as<act::apply_push>(out[0]);
      CHECK(a.rank == 0);
      CHECK(a.lr_scale == 1.0);
      CHECK(a.step == 0);
      CHECK(a.version == 1);
      CHECK(a.staleness == 0);
    }

    // Rank 1's push completes global step 0 and releases rank 0, which waited 2.5 s.
    out = s.on_push(arr(1, 0, 0.75, 8), 3.5);
    REQUIRE(kinds(out) == "apply_push complete waited hand_out hand_out");
    {
      const auto& a = as<act::apply_push>(out[0]);
      CHECK(a.rank == 1);
      CHECK(a.lr_scale == 1.0);  // no lr scaling, though the push is stale
      CHECK(a.version == 2);
      CHECK(a.staleness == 1);
      const auto& done = as<act::complete>(out[1]);
      CHECK(done.step == 0);
      REQUIRE(done.parts.size() == 2);
      check_part(done.parts[0], 0, 0.5, 8);
      check_part(done.parts[1], 1, 0.75, 8);
      CHECK(!done.switches_to.has_value());
      const auto& w = as<act::waited>(out[2]);
      CHECK(w.rank == 0);
      CHECK(w.clock == 1);
      CHECK(w.wait_s == 2.5);
      const auto& h0 = as<act::hand_out>(out[3]);
      CHECK(h0.rank == 0);
      CHECK(h0.version == 2);
      CHECK(h0.step == 1);
      const auto& h1 = as<act::hand_out>(out[4]);
      CHECK(h1.rank == 1);
      CHECK(h1.version == 2);
      CHECK(h1.step == 1);
    }

    // Step 1: rank 1 first this time; the parts still come in worker order; step 1 evaluates.
    out = s.on_push(arr(1, 1, 0.25, 8), 4.0);
    REQUIRE(kinds(out) == "apply_push");
    out = s.on_push(arr(0, 1, 0.125, 8), 6.0);
    REQUIRE(kinds(out) == "apply_push complete evaluate waited hand_out hand_out");
    {
      CHECK(as<act::apply_push>(out[0]).staleness == 1);
      const auto& done = as<act::complete>(out[1]);
      CHECK(done.step == 1);
      REQUIRE(done.parts.size() == 2);
      check_part(done.parts[0], 0, 0.125, 8);
      check_part(done.parts[1], 1, 0.25, 8);
      const auto& e = as<act::evaluate>(out[2]);
      CHECK(e.step == 1);
      CHECK(e.ranks.empty());
      const auto& w = as<act::waited>(out[3]);
      CHECK(w.rank == 1);
      CHECK(w.wait_s == 2.0);
      CHECK(as<act::hand_out>(out[4]).rank == 1);
      CHECK(as<act::hand_out>(out[4]).step == 2);
      CHECK(as<act::hand_out>(out[5]).rank == 0);
      CHECK(as<act::hand_out>(out[5]).version == 4);
    }

    // Step 2, the last: 6 = replicas x steps pushes, training done and no weights handed out.
    out = s.on_push(arr(0, 2, 0.5, 8), 7.0);
    REQUIRE(kinds(out) == "apply_push");
    out = s.on_push(arr(1, 2, 0.5, 8), 9.0);
    INFO("actions: " << kinds(out));
    CHECK(kinds(out).find("hand_out") == std::string::npos);
    REQUIRE(out.size() >= 4);
    CHECK(std::holds_alternative<act::training_done>(out.back()));
    CHECK(as<act::apply_push>(out[0]).version == 6);
    CHECK(as<act::complete>(out[1]).step == 2);
    CHECK(as<act::evaluate>(out[2]).step == 2);
  }

  TEST_CASE("async with lr scaling: a push of staleness k is applied with 1 / (1 + k)") {
    const step_rules rules(4, 4, 0);
    async_strategy s(2, std::nullopt, true, rules);
    REQUIRE(kinds(s.start()) == "hand_out hand_out");
    auto out = s.on_push(arr(0, 0), 0.0);
    REQUIRE(kinds(out) == "apply_push hand_out");
    CHECK(as<act::apply_push>(out[0]).lr_scale == 1.0);
    CHECK(as<act::hand_out>(out[1]).version == 1);
    out = s.on_push(arr(0, 1), 0.0);  // pulled version 1, pushed at version 1: fresh
    REQUIRE(kinds(out) == "apply_push complete hand_out");
    CHECK(as<act::apply_push>(out[0]).staleness == 0);
    CHECK(as<act::apply_push>(out[0]).lr_scale == 1.0);
    const auto& done = as<act::complete>(out[1]);
    REQUIRE(done.parts.size() == 2);  // rank 0 twice: the quicker worker contributes more
    CHECK(done.parts[0].worker == 0);
    CHECK(done.parts[1].worker == 0);
    CHECK(done.parts[0].batch == 0);  // each push's rows come from its pusher's own batch
    CHECK(done.parts[1].batch == 1);
    out = s.on_push(arr(1, 0), 0.0);  // pulled version 0, two applied since
    REQUIRE(kinds(out) == "apply_push hand_out");
    CHECK(as<act::apply_push>(out[0]).staleness == 2);
    CHECK(as<act::apply_push>(out[0]).lr_scale == 1.0 / 3.0);
    CHECK(as<act::apply_push>(out[0]).version == 3);
    out = s.on_push(arr(0, 2), 0.0);  // pulled version 2, one applied since
    REQUIRE(kinds(out) == "apply_push complete hand_out");
    CHECK(as<act::apply_push>(out[0]).staleness == 1);
    CHECK(as<act::apply_push>(out[0]).lr_scale == 1.0 / 2.0);
    CHECK(as<act::apply_push>(out[0]).version == 4);
    CHECK(as<act::complete>(out[1]).step == 1);
  }

  TEST_CASE("async: a push without a pull in progress is a violation") {
    const step_rules rules(4, 4, 0);
    async_strategy s(2, int64_t{0}, false, rules);
    s.start();
    CHECK(kinds(s.on_push(arr(0, 0), 0.0)) == "apply_push");
    // Rank 0 waits for rank 1: it holds no weights, so it cannot push.
    const auto reason = violation_of(s.on_push(arr(0, 1), 0.5));
    CHECK(contains(reason, "worker 0"));
    CHECK(contains(reason, "pushed a gradient for step 1 without weights to compute it on"));
    CHECK(contains(violation_of(s.on_push(arr(2, 0), 0.5)), "worker 2 is unknown"));
    CHECK(contains(violation_of(s.on_push(arr(-1, 0), 0.5)), "worker -1 is unknown"));
    CHECK(kinds(s.on_push(arr(1, 0), 1.0)) == "apply_push complete waited hand_out hand_out");
  }

  TEST_CASE("async: a push from a worker that was handed no weights is a violation") {
    // One step of two ranks: two pushes in all, both handed out at the start. Rank 0's push
    // leaves no weights to hand out, so a second push from rank 0 has no pull behind it.
    const step_rules rules(1, 1, 0);
    async_strategy s(2, std::nullopt, false, rules);
    REQUIRE(kinds(s.start()) == "hand_out hand_out");
    REQUIRE(kinds(s.on_push(arr(0, 0), 0.0)) == "apply_push");
    const auto out = s.on_push(arr(0, 1), 0.0);
    INFO("actions: " << kinds(out));
    CHECK(kinds(out) == "violation");
  }

  TEST_CASE("async: random push orders hand out exactly replicas x steps and end once") {
    std::mt19937 rng(11);
    const std::vector<std::optional<int64_t>> bounds{std::nullopt, int64_t{0}, int64_t{1},
                                                     int64_t{3}};
    for (int trial = 0; trial < 200; ++trial) {
      const int64_t ranks = 1 + static_cast<int64_t>(rng() % 4);
      const int64_t steps = 1 + static_cast<int64_t>(rng() % 6);
      const auto bound = bounds[rng() % bounds.size()];
      const bool scaling = rng() % 2 == 0;
      CAPTURE(trial);
      const step_rules rules(steps, 2, 0);
      async_strategy s(ranks, bound, scaling, rules);

      std::vector<std::pair<int64_t, int64_t>> busy;  // (rank, step) handed out, not pushed
      int64_t hand_outs = 0;
      int64_t pushes = 0;
      int64_t completes = 0;
      int64_t done = 0;
      double now = 0;
      const auto take = [&](const step_actions& out) {
        for (const auto& a : out) {
          REQUIRE(!std::holds_alternative<act::violation>(a));
          if (const auto* h = std::get_if<act::hand_out>(&a)) {
            ++hand_outs;
            for (const auto& b : busy)
              REQUIRE(b.first != h->rank);  // one pull at a time per worker
            busy.emplace_back(h->rank, h->step);
          } else if (const auto* p = std::get_if<act::apply_push>(&a)) {
            ++pushes;
            CHECK(p->version == pushes);
            CHECK(p->lr_scale == (scaling ? 1.0 / (1.0 + static_cast<double>(p->staleness)) : 1.0));
            if (bound)  // others push at most 2 * bound + 1 times while one computes
              CHECK(p->staleness <= (2 * *bound + 1) * (ranks - 1));
          } else if (const auto* c = std::get_if<act::complete>(&a)) {
            CHECK(c->step == completes);
            ++completes;
            REQUIRE(static_cast<int64_t>(c->parts.size()) == ranks);
            CHECK(std::is_sorted(
                c->parts.begin(), c->parts.end(),
                [](const step_part& x, const step_part& y) { return x.worker < y.worker; }));
          } else if (std::holds_alternative<act::training_done>(a)) {
            ++done;
          }
        }
      };
      take(s.start());
      while (done == 0) {
        REQUIRE(!busy.empty());  // someone can always go on
        const auto i = rng() % busy.size();
        const auto [rank, step] = busy[i];
        busy.erase(busy.begin() + static_cast<std::ptrdiff_t>(i));
        now += 0.25;
        take(s.on_push(arr(rank, step, 1.0, 1), now));
        REQUIRE(hand_outs <= ranks * steps);
      }
      CHECK(done == 1);
      CHECK(hand_outs == ranks * steps);
      CHECK(pushes == ranks * steps);
      CHECK(completes == steps);
      CHECK(busy.empty());
    }
  }

  TEST_CASE("async resumed at step 2: the server's version and every clock carry on") {
    const step_rules rules(4, 4, 0);
    async_strategy s(3, int64_t{0}, false, rules, 2);
    auto out = s.start();
    REQUIRE(kinds(out) == "hand_out hand_out hand_out");
    for (const auto& a : out) {
      CHECK(as<act::hand_out>(a).version == 6);
      CHECK(as<act::hand_out>(a).step == 2);
    }
    // Pushes 7, 8 and 9 make global step 2.
    CHECK(kinds(s.on_push(arr(0, 2), 1.0)) == "apply_push");
    CHECK(kinds(s.on_push(arr(1, 2), 1.0)) == "apply_push");
    out = s.on_push(arr(2, 2), 1.0);
    REQUIRE(kinds(out).rfind("apply_push complete", 0) == 0);
    CHECK(as<act::complete>(out[1]).step == 2);
  }
}
