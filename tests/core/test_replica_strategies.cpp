// The data-parallel policies as pure strategies (sync at the driver or among the workers,
// local SGD, schedules of both): the exact actions each answers to a run's events, and the
// protocol violations each must refuse.
#include "core/policy/local_sgd_strategy.hpp"
#include "core/policy/schedule_strategy.hpp"
#include "core/policy/sync_strategy.hpp"

#include "strategy_helpers.hpp"

#include <doctest/doctest.h>

using namespace troupe;
using namespace troupe::test;

TEST_SUITE("strategies") {
  // ---- sync, gradients meeting at the driver ------------------------------------------------

  TEST_CASE("sync at the driver: start computes step 0 on every rank") {
    const step_rules rules(4, 2, 0);
    sync_strategy s(3, plain(policy_kind::sync, rules), rules, true);
    CHECK(std::string(s.name()) == "sync");
    const auto out = s.start();
    REQUIRE(kinds(out) == "compute");
    CHECK(as<act::compute>(out[0]).step == 0);
    CHECK(list(as<act::compute>(out[0]).ranks) == "0 1 2");
  }

  TEST_CASE("sync at the driver: the last gradient combines in rank order and completes") {
    const step_rules rules(4, 2, 0);  // evaluates after steps 1 and 3
    sync_strategy s(3, plain(policy_kind::sync, rules), rules, true);
    s.start();
    CHECK(kinds(s.on_gradient(arr(2, 0, 0.75, 10))) == "");
    CHECK(kinds(s.on_gradient(arr(0, 0, 0.25, 11))) == "");
    const auto out = s.on_gradient(arr(1, 0, 0.5, 12));
    REQUIRE(kinds(out) == "combine complete");
    const auto& c = as<act::combine>(out[0]);
    CHECK(c.kind == act::combine::what::gradients);
    CHECK(list(c.from) == "0 1 2");
    CHECK(c.weights.empty());
    CHECK(list(c.to) == "0 1 2");
    check_outcome(c.outcome, 0, false, false);
    const auto& done = as<act::complete>(out[1]);
    CHECK(done.step == 0);
    REQUIRE(done.parts.size() == 3);
    check_part(done.parts[0], 0, 0.25, 11);
    check_part(done.parts[1], 1, 0.5, 12);
    check_part(done.parts[2], 2, 0.75, 10);
    CHECK(!done.switches_to.has_value());

    // Step 1 ends an epoch: its combine says evaluate.
    const auto second = gradients_all(s, 3, 1);
    REQUIRE(kinds(second) == "combine complete");
    check_outcome(as<act::combine>(second[0]).outcome, 1, true, false);
    CHECK(as<act::complete>(second[1]).step == 1);
  }

  TEST_CASE("sync at the driver: the last step ends with training_done") {
    const step_rules rules(3, 3, 0);
    sync_strategy s(2, plain(policy_kind::sync, rules), rules, true);
    s.start();
    CHECK(kinds(gradients_all(s, 2, 0)) == "combine complete");
    CHECK(kinds(gradients_all(s, 2, 1)) == "combine complete");
    const auto out = gradients_all(s, 2, 2);
    REQUIRE(kinds(out) == "combine complete training_done");
    check_outcome(as<act::combine>(out[0]).outcome, 2, true, true);
    CHECK(as<act::complete>(out[1]).step == 2);
  }

  TEST_CASE("sync at the driver: a gradient for the wrong step is a violation") {
    const step_rules rules(4, 4, 0);
    sync_strategy s(3, plain(policy_kind::sync, rules), rules, true);
    s.start();
    const auto ahead = violation_of(s.on_gradient(arr(0, 1)));
    CHECK(contains(ahead, "worker 0"));
    CHECK(contains(ahead, "step 1, expected step 0"));
    // A stale gradient, after step 0 completed.
    CHECK(kinds(gradients_all(s, 3, 0)) == "combine complete");
    const auto stale = violation_of(s.on_gradient(arr(2, 0)));
    CHECK(contains(stale, "worker 2"));
    CHECK(contains(stale, "step 0, expected step 1"));
    // Neither changed the round in progress.
    CHECK(kinds(gradients_all(s, 3, 1)) == "combine complete");
  }

  TEST_CASE("sync at the driver: a second gradient from a rank is a violation") {
    const step_rules rules(4, 4, 0);
    sync_strategy s(3, plain(policy_kind::sync, rules), rules, true);
    s.start();
    CHECK(kinds(s.on_gradient(arr(1, 0))) == "");
    const auto twice = violation_of(s.on_gradient(arr(1, 0)));
    CHECK(contains(twice, "worker 1"));
    CHECK(contains(twice, "sent its gradient for step 0 twice"));
    CHECK(kinds(s.on_gradient(arr(0, 0))) == "");
    const auto out = s.on_gradient(arr(2, 0));
    REQUIRE(kinds(out) == "combine complete");
    CHECK(list(as<act::combine>(out[0]).from) == "0 1 2");
  }

  TEST_CASE("sync at the driver: a gradient from an unknown rank is a violation") {
    const step_rules rules(4, 4, 0);
    sync_strategy s(3, plain(policy_kind::sync, rules), rules, true);
    s.start();
    const auto beyond = violation_of(s.on_gradient(arr(3, 0)));
    CHECK(contains(beyond, "worker 3"));
    CHECK(contains(beyond, "unknown"));
    const auto negative = violation_of(s.on_gradient(arr(-1, 0)));
    CHECK(contains(negative, "worker -1"));
    CHECK(contains(negative, "unknown"));
    CHECK(kinds(gradients_all(s, 3, 0)) == "combine complete");
  }

  TEST_CASE("sync at the driver: reports decide nothing") {
    const step_rules rules(1, 1, 0);
    sync_strategy s(2, plain(policy_kind::sync, rules), rules, true);
    s.start();
    CHECK(kinds(s.on_report(arr(0, 0))) == "");
    CHECK(kinds(s.on_report(arr(1, 0))) == "");  // every rank reported: still nothing
    CHECK(kinds(s.on_report(arr(1, 0))) == "");  // nor a duplicate
    CHECK(kinds(gradients_all(s, 2, 0)) == "combine complete training_done");
    CHECK(kinds(s.on_report(arr(0, 0))) == "");
    CHECK(kinds(s.on_report(arr(1, 0))) == "");
  }

  // ---- sync, gradients meeting among the workers --------------------------------------------

  TEST_CASE("sync among workers: a gradient sent to the driver is a violation") {
    const step_rules rules(2, 2, 0);
    sync_strategy s(2, plain(policy_kind::sync, rules), rules, false);
    REQUIRE(kinds(s.start()) == "compute");
    const auto reason = violation_of(s.on_gradient(arr(1, 0)));
    CHECK(contains(reason, "worker 1"));
    CHECK(contains(reason, "which the sync policy does not expect"));
  }

  TEST_CASE("sync among workers: a step completes when every rank reported it") {
    const step_rules rules(2, 2, 0);
    sync_strategy s(3, plain(policy_kind::sync, rules), rules, false);
    s.start();
    CHECK(kinds(s.on_report(arr(1, 0, 0.5, 8))) == "");
    CHECK(kinds(s.on_report(arr(2, 0, 0.75, 7))) == "");
    const auto out = s.on_report(arr(0, 0, 0.25, 9));
    REQUIRE(kinds(out) == "complete");
    const auto& done = as<act::complete>(out[0]);
    CHECK(done.step == 0);
    REQUIRE(done.parts.size() == 3);
    check_part(done.parts[0], 0, 0.25, 9);
    check_part(done.parts[1], 1, 0.5, 8);
    check_part(done.parts[2], 2, 0.75, 7);
    CHECK(!done.switches_to.has_value());
    const auto last = report_all(s, 3, 1);
    REQUIRE(kinds(last) == "complete training_done");
    CHECK(as<act::complete>(last[0]).step == 1);
  }

  TEST_CASE("sync among workers: reports of two steps interleave") {
    const step_rules rules(3, 3, 0);
    sync_strategy s(2, plain(policy_kind::sync, rules), rules, false);
    s.start();
    CHECK(kinds(s.on_report(arr(0, 0, 1.0, 4))) == "");
    CHECK(kinds(s.on_report(arr(0, 1, 2.0, 4))) == "");  // the fast rank runs ahead
    const auto zero = s.on_report(arr(1, 0, 3.0, 5));
    REQUIRE(kinds(zero) == "complete");
    const auto& z = as<act::complete>(zero[0]);
    CHECK(z.step == 0);
    REQUIRE(z.parts.size() == 2);
    check_part(z.parts[0], 0, 1.0, 4);
    check_part(z.parts[1], 1, 3.0, 5);
    const auto one = s.on_report(arr(1, 1, 4.0, 5));
    REQUIRE(kinds(one) == "complete");
    const auto& o = as<act::complete>(one[0]);
    CHECK(o.step == 1);
    REQUIRE(o.parts.size() == 2);
    check_part(o.parts[0], 0, 2.0, 4);
    check_part(o.parts[1], 1, 4.0, 5);
  }

  TEST_CASE("sync among workers: a duplicate or unknown report is a violation") {
    const step_rules rules(3, 3, 0);
    sync_strategy s(2, plain(policy_kind::sync, rules), rules, false);
    s.start();
    CHECK(kinds(s.on_report(arr(0, 0))) == "");
    CHECK(violation_of(s.on_report(arr(0, 0))) == "worker 0 reported step 0 twice");
    CHECK(violation_of(s.on_report(arr(2, 0))) == "worker 2 is unknown (there are 2)");
    CHECK(kinds(s.on_report(arr(1, 0))) == "complete");
  }

  // ---- local SGD ----------------------------------------------------------------------------

  TEST_CASE("local_sgd: averages at the period, at evaluations and at the end, by rows") {
    // 8 steps, epochs of 4, period 3: averages after steps 2 (period), 3 (evaluation), 5
    // (period) and 7 (the last, an evaluation).
    const step_rules rules(8, 4, 0);
    local_sgd_strategy s(3, plain(policy_kind::local_sgd, rules, 3), rules);
    CHECK(std::string(s.name()) == "local_sgd");
    const auto start = s.start();
    REQUIRE(kinds(start) == "compute");
    CHECK(as<act::compute>(start[0]).step == 0);
    CHECK(list(as<act::compute>(start[0]).ranks) == "0 1 2");

    struct expected {
      int64_t step;
      bool evaluate;
      bool last;
    };
    const std::vector<expected> averages{
        {2, false, false}, {3, true, false}, {5, false, false}, {7, true, true}};
    std::size_t next = 0;
    for (int64_t step = 0; step < 8; ++step) {
      CAPTURE(step);
      const bool averages_now = next < averages.size() && averages[next].step == step;
      if (averages_now) {
        // Uneven rows: 11, 11 and 10 of 32.
        CHECK(kinds(s.on_weights(arr(2, step, 0, 10))) == "");
        CHECK(kinds(s.on_weights(arr(0, step, 0, 11))) == "");
        const auto out = s.on_weights(arr(1, step, 0, 11));
        REQUIRE(kinds(out) == "combine");
        const auto& c = as<act::combine>(out[0]);
        CHECK(c.kind == act::combine::what::weights);
        CHECK(list(c.from) == "0 1 2");
        REQUIRE(c.weights.size() == 3);
        CHECK(c.weights[0] == 11.0 / 32.0);
        CHECK(c.weights[1] == 11.0 / 32.0);
        CHECK(c.weights[2] == 10.0 / 32.0);
        CHECK(list(c.to) == "0 1 2");
        check_outcome(c.outcome, step, averages[next].evaluate, averages[next].last);
        ++next;
      } else {
        // Weights after a step that does not average.
        const auto reason = violation_of(s.on_weights(arr(0, step, 0, 11)));
        CHECK(contains(reason, "worker 0"));
        CHECK(contains(reason, "after step " + std::to_string(step)));
        CHECK(contains(reason, "expected after step " + std::to_string(averages[next].step)));
      }
      CHECK(kinds(s.on_report(arr(1, step, 0.5, 11))) == "");
      CHECK(kinds(s.on_report(arr(2, step, 0.75, 10))) == "");
      const auto out = s.on_report(arr(0, step, 0.25, 11));
      REQUIRE(kinds(out) == (step == 7 ? "complete training_done" : "complete"));
      const auto& done = as<act::complete>(out[0]);
      CHECK(done.step == step);
      REQUIRE(done.parts.size() == 3);
      check_part(done.parts[0], 0, 0.25, 11);
      check_part(done.parts[1], 1, 0.5, 11);
      check_part(done.parts[2], 2, 0.75, 10);
      CHECK(!done.switches_to.has_value());
    }
    CHECK(next == averages.size());
  }

  TEST_CASE("local_sgd: weights of a later averaging step, twice, or from no rank: violations") {
    const step_rules rules(6, 6, 0);  // period 2: averages after 1, 3 and 5
    local_sgd_strategy s(2, plain(policy_kind::local_sgd, rules, 2), rules);
    s.start();
    CHECK(contains(violation_of(s.on_weights(arr(0, 3, 0, 1))), "expected after step 1"));
    CHECK(kinds(s.on_weights(arr(0, 1, 0, 1))) == "");
    CHECK(contains(violation_of(s.on_weights(arr(0, 1, 0, 1))), "worker 0"));
    CHECK(contains(violation_of(s.on_weights(arr(2, 1, 0, 1))), "worker 2"));
    const auto out = s.on_weights(arr(1, 1, 0, 3));
    REQUIRE(kinds(out) == "combine");
    const auto& c = as<act::combine>(out[0]);
    REQUIRE(c.weights.size() == 2);
    CHECK(c.weights[0] == 1.0 / 4.0);
    CHECK(c.weights[1] == 3.0 / 4.0);
    // The round is over: the next average is after step 3.
    CHECK(contains(violation_of(s.on_weights(arr(1, 1, 0, 1))), "expected after step 3"));
    CHECK(kinds(weights_all(s, 2, 3)) == "combine");
  }

  TEST_CASE("local_sgd: a gradient is a violation, and a duplicate report too") {
    const step_rules rules(4, 4, 0);
    local_sgd_strategy s(2, plain(policy_kind::local_sgd, rules, 2), rules);
    s.start();
    CHECK(contains(violation_of(s.on_gradient(arr(0, 0))),
                   "which the local_sgd policy does not expect"));
    CHECK(kinds(s.on_report(arr(1, 0))) == "");
    CHECK(violation_of(s.on_report(arr(1, 0))) == "worker 1 reported step 0 twice");
    CHECK(kinds(s.on_report(arr(0, 0))) == "complete");
  }

  // ---- schedule -----------------------------------------------------------------------------

  TEST_CASE("schedule: sync, local_sgd, sync; each phase's last step names the next policy") {
    // 12 steps, one epoch: sync 0..4, local_sgd 5..8 (period 2: averages after 6 and 8, the
    // end of the phase), sync 9..11.
    const step_rules rules(12, 12, 0);
    parallelism_config p;
    p.policy = policy_kind::schedule;
    p.phases = {{policy_kind::sync, 5, 8, false},
                {policy_kind::local_sgd, 4, 2, false},
                {policy_kind::sync, 0, 8, false}};
    const policy_schedule schedule(p, rules);
    schedule_strategy s(2, schedule, rules, true);
    CHECK(std::string(s.name()) == "schedule");
    const auto start = s.start();
    REQUIRE(kinds(start) == "compute");
    CHECK(as<act::compute>(start[0]).step == 0);
    CHECK(list(as<act::compute>(start[0]).ranks) == "0 1");

    for (int64_t step = 0; step < 12; ++step) {
      CAPTURE(step);
      const bool local = step >= 5 && step <= 8;
      if (!local) {
        // Weights in a sync phase are a violation; so is a report deciding anything.
        CHECK(kinds(s.on_weights(arr(0, step, 0, 1))) == "violation");
        CHECK(kinds(s.on_report(arr(0, step))) == "");
        const auto out = gradients_all(s, 2, step);
        REQUIRE(kinds(out) == (step == 11 ? "combine complete training_done" : "combine complete"));
        const auto& c = as<act::combine>(out[0]);
        CHECK(c.kind == act::combine::what::gradients);
        check_outcome(c.outcome, step, step == 11, step == 11);
        const auto& done = as<act::complete>(out[1]);
        CHECK(done.step == step);
        if (step == 4) {
          REQUIRE(done.switches_to.has_value());
          CHECK(*done.switches_to == policy_kind::local_sgd);
        } else {
          CHECK(!done.switches_to.has_value());
        }
      } else {
        // A gradient in the local_sgd phase is a violation: the next sync step is 9.
        const auto reason = violation_of(s.on_gradient(arr(1, step)));
        CHECK(contains(reason, "expected step 9"));
        if (step == 6 || step == 8) {
          const auto avg = weights_all(s, 2, step);
          REQUIRE(kinds(avg) == "combine");
          const auto& c = as<act::combine>(avg[0]);
          CHECK(c.kind == act::combine::what::weights);
          CHECK(list(c.from) == "0 1");
          check_outcome(c.outcome, step, false, false);
        } else {
          CHECK(kinds(s.on_weights(arr(0, step, 0, 1))) == "violation");
        }
        const auto out = report_all(s, 2, step, 0.5, 4);
        REQUIRE(kinds(out) == "complete");
        const auto& done = as<act::complete>(out[0]);
        CHECK(done.step == step);
        REQUIRE(done.parts.size() == 2);
        check_part(done.parts[1], 1, 0.5, 4);
        if (step == 8) {
          REQUIRE(done.switches_to.has_value());
          CHECK(*done.switches_to == policy_kind::sync);
        } else {
          CHECK(!done.switches_to.has_value());
        }
      }
    }
  }

  // ---- resumed runs ---------------------------------------------------------------------------

  TEST_CASE("resumed at step 5: sync starts there and refuses what belongs before it") {
    const step_rules rules(10, 5, 0);
    sync_strategy at_driver(2, plain(policy_kind::sync, rules), rules, true, 5);
    auto out = at_driver.start();
    REQUIRE(kinds(out) == "compute");
    CHECK(as<act::compute>(out[0]).step == 5);
    CHECK(contains(violation_of(at_driver.on_gradient(arr(0, 4))), "expected step 5"));
    sync_strategy among(2, plain(policy_kind::sync, rules), rules, false, 5);
    CHECK(contains(violation_of(among.on_report(arr(1, 4))), "step 4, which is complete"));
    CHECK(kinds(among.on_report(arr(0, 5))) == "");
    CHECK(kinds(among.on_report(arr(1, 5))) == "complete");
  }

  TEST_CASE("resumed at step 5: local_sgd averages next at its period's step") {
    const step_rules rules(20, 20, 0);
    local_sgd_strategy s(2, plain(policy_kind::local_sgd, rules, 4), rules, 5);
    CHECK(as<act::compute>(s.start()[0]).step == 5);
    CHECK(contains(violation_of(s.on_weights(arr(0, 3))), "expected after step 7"));
    CHECK(kinds(s.on_weights(arr(0, 7, 0, 1))) == "");
    CHECK(kinds(s.on_weights(arr(1, 7, 0, 1))) == "combine");
  }

  TEST_CASE("resumed at step 5: a schedule starts in the phase of step 5") {
    const step_rules rules(10, 10, 0);
    parallelism_config p;
    p.policy = policy_kind::schedule;
    p.phases = {{policy_kind::sync, 4, 8, false}, {policy_kind::local_sgd, 0, 2, false}};
    const policy_schedule schedule(p, rules);
    schedule_strategy s(2, schedule, rules, true, 5);
    CHECK(as<act::compute>(s.start()[0]).step == 5);
    CHECK(kinds(s.on_report(arr(0, 5))) == "");
    CHECK(kinds(s.on_report(arr(1, 5))) == "complete");
  }
}
