// The pipeline flush as a pure strategy, and what every strategy must refuse: per-stage
// combines, completion from the stages' reports, evaluation before the next step, violations
// that name the worker and step, and no policy going on without a worker.
#include "core/policy/async_strategy.hpp"
#include "core/policy/local_sgd_strategy.hpp"
#include "core/policy/pipeline_strategy.hpp"
#include "core/policy/schedule_strategy.hpp"
#include "core/policy/sync_strategy.hpp"

#include <memory>

#include "strategy_helpers.hpp"

#include <doctest/doctest.h>

using namespace troupe;
using namespace troupe::test;

TEST_SUITE("pipeline_strategy") {
  // ---- pipeline -----------------------------------------------------------------------------

  TEST_CASE("pipeline: stage gradients combine per stage, reports complete, evaluation waits") {
    // 2 pipelines x 2 stages: stage 0 is workers 0 and 2, stage 1 workers 1 and 3. 3 steps,
    // evaluating after step 1 and after step 2 (the last).
    const step_rules rules(3, 3, 2);
    pipeline_strategy s(2, 2, rules);
    CHECK(std::string(s.name()) == "pipeline (sync)");
    auto out = s.start();
    REQUIRE(kinds(out) == "compute");
    CHECK(as<act::compute>(out[0]).step == 0);
    CHECK(list(as<act::compute>(out[0]).ranks) == "0 1 2 3");

    for (int64_t step = 0; step < 3; ++step) {
      CAPTURE(step);
      const bool last = step == 2;
      // The last stages carry the pipelines' losses and rows; pipeline 1 is in first.
      CHECK(kinds(s.on_gradient(arr(3, step, 0.75, 15))) == "");
      CHECK(kinds(s.on_gradient(arr(2, step))) == "");
      out = s.on_gradient(arr(0, step));
      REQUIRE(kinds(out) == "combine");
      {
        const auto& c = as<act::combine>(out[0]);
        CHECK(c.kind == act::combine::what::gradients);
        CHECK(list(c.from) == "0 2");
        CHECK(list(c.to) == "0 2");
        CHECK(c.weights.empty());
        check_outcome(c.outcome, step, false, last);  // stages never evaluate on their own
      }
      out = s.on_gradient(arr(1, step, 0.25, 17));
      REQUIRE(kinds(out) == "combine");
      {
        const auto& c = as<act::combine>(out[0]);
        CHECK(list(c.from) == "1 3");
        CHECK(list(c.to) == "1 3");
        check_outcome(c.outcome, step, false, last);
      }
      CHECK(kinds(s.on_report(arr(2, step))) == "");
      CHECK(kinds(s.on_report(arr(0, step))) == "");
      CHECK(kinds(s.on_report(arr(3, step))) == "");
      out = s.on_report(arr(1, step));
      const auto& done = as<act::complete>(out.at(0));
      CHECK(done.step == step);
      REQUIRE(done.parts.size() == 2);
      check_part(done.parts[0], 1, 0.25, 17);
      check_part(done.parts[1], 3, 0.75, 15);
      CHECK(!done.switches_to.has_value());
      if (step == 0) {
        REQUIRE(kinds(out) == "complete compute");
        CHECK(as<act::compute>(out[1]).step == 1);
        CHECK(list(as<act::compute>(out[1]).ranks) == "0 1 2 3");
      } else if (step == 1) {
        REQUIRE(kinds(out) == "complete evaluate");
        CHECK(as<act::evaluate>(out[1]).step == 1);
        CHECK(list(as<act::evaluate>(out[1]).ranks) == "0 2");
        // No step 2 before the evaluation is in.
        CHECK(kinds(s.on_gradient(arr(0, 2))) == "violation");
        CHECK(kinds(s.on_evaluated(0)) == "violation");
        out = s.on_evaluated(1);
        REQUIRE(kinds(out) == "compute");
        CHECK(as<act::compute>(out[0]).step == 2);
        CHECK(list(as<act::compute>(out[0]).ranks) == "0 1 2 3");
        CHECK(kinds(s.on_evaluated(1)) == "violation");  // none pending any more
      } else {
        REQUIRE(kinds(out) == "complete evaluate training_done");
        CHECK(as<act::evaluate>(out[1]).step == 2);
        CHECK(list(as<act::evaluate>(out[1]).ranks) == "0 2");
        CHECK(kinds(s.on_evaluated(2)) == "");
      }
    }
  }

  TEST_CASE("pipeline: events of another step, unknown workers and stray evaluations") {
    const step_rules rules(4, 4, 0);
    pipeline_strategy s(2, 2, rules);
    s.start();
    const auto ahead = violation_of(s.on_gradient(arr(1, 1)));
    CHECK(contains(ahead, "worker 1"));
    CHECK(contains(ahead, "expected step 0"));
    CHECK(violation_of(s.on_report(arr(2, 1))) == "worker 2 reported step 1 during step 0");
    CHECK(contains(violation_of(s.on_gradient(arr(4, 0))), "worker 4"));
    CHECK(contains(violation_of(s.on_gradient(arr(-1, 0))), "worker -1"));
    CHECK(violation_of(s.on_evaluated(0)) ==
          "an evaluation after step 0 completed, none was asked for");
    CHECK(kinds(s.on_gradient(arr(2, 0))) == "");
    CHECK(violation_of(s.on_gradient(arr(2, 0))) == "worker 2 sent its gradient for step 0 twice");
    CHECK(kinds(s.on_report(arr(3, 0))) == "");
    CHECK(violation_of(s.on_report(arr(3, 0))) == "worker 3 reported step 0 twice");
    CHECK(kinds(s.on_report(arr(4, 0))) == "violation");
    // None of it disturbed step 0.
    CHECK(kinds(s.on_gradient(arr(0, 0))) == "combine");
    CHECK(kinds(s.on_gradient(arr(1, 0))) == "");
    CHECK(kinds(s.on_gradient(arr(3, 0))) == "combine");
    CHECK(kinds(s.on_report(arr(0, 0))) == "");
    CHECK(kinds(s.on_report(arr(1, 0))) == "");
    CHECK(kinds(s.on_report(arr(2, 0))) == "complete compute");
    // Step 0 is over: its events are now stale.
    CHECK(kinds(s.on_gradient(arr(0, 0))) == "violation");
    CHECK(kinds(s.on_report(arr(0, 0))) == "violation");
  }

  TEST_CASE("violations name the worker and the step the event was about") {
    SUBCASE("a second gradient in a later sync phase of a schedule names its step") {
      const step_rules rules(8, 8, 0);
      parallelism_config p;
      p.policy = policy_kind::schedule;
      p.phases = {{policy_kind::local_sgd, 4, 2, false}, {policy_kind::sync, 0, 8, false}};
      schedule_strategy s(2, policy_schedule(p, rules), rules, true);
      s.start();
      for (int64_t step = 0; step < 4; ++step) {
        if (step == 1 || step == 3)
          REQUIRE(kinds(weights_all(s, 2, step)) == "combine");
        REQUIRE(kinds(report_all(s, 2, step)) == "complete");
      }
      REQUIRE(kinds(s.on_gradient(arr(0, 4))) == "");
      const auto reason = violation_of(s.on_gradient(arr(0, 4)));
      INFO("reason: " << reason);
      CHECK(contains(reason, "worker 0"));
      CHECK(contains(reason, "step 4"));
    }
    SUBCASE("second weights name the averaging step, and weights, not a gradient") {
      const step_rules rules(6, 6, 0);
      local_sgd_strategy s(2, plain(policy_kind::local_sgd, rules, 3), rules);
      s.start();
      REQUIRE(kinds(s.on_weights(arr(1, 2, 0, 1))) == "");
      const auto reason = violation_of(s.on_weights(arr(1, 2, 0, 1)));
      INFO("reason: " << reason);
      CHECK(contains(reason, "worker 1"));
      CHECK(contains(reason, "step 2"));
      CHECK(!contains(reason, "gradient"));
    }
    SUBCASE("a second stage gradient names the worker that sent it") {
      const step_rules rules(2, 2, 0);
      pipeline_strategy s(2, 2, rules);
      s.start();
      REQUIRE(kinds(s.on_gradient(arr(3, 0))) == "");
      const auto reason = violation_of(s.on_gradient(arr(3, 0)));
      INFO("reason: " << reason);
      CHECK(contains(reason, "worker 3"));
    }
  }

  TEST_CASE("a report of a step already complete is a violation") {
    SUBCASE("sync among workers") {
      const step_rules rules(4, 4, 0);
      sync_strategy s(2, plain(policy_kind::sync, rules), rules, false);
      s.start();
      REQUIRE(kinds(report_all(s, 2, 0)) == "complete");
      const auto again = s.on_report(arr(0, 0));
      INFO("actions: " << kinds(again));
      CHECK(kinds(again) == "violation");
    }
    SUBCASE("pipeline, during the evaluation after the step") {
      const step_rules rules(4, 2, 0);  // evaluates after step 1
      pipeline_strategy s(1, 2, rules);
      s.start();
      for (int64_t step = 0; step < 2; ++step) {
        REQUIRE(kinds(s.on_gradient(arr(0, step))) == "combine");
        REQUIRE(kinds(s.on_gradient(arr(1, step))) == "combine");
        REQUIRE(kinds(s.on_report(arr(0, step))) == "");
        REQUIRE(kinds(s.on_report(arr(1, step))) ==
                (step == 0 ? "complete compute" : "complete evaluate"));
      }
      const auto again = s.on_report(arr(0, 1));
      INFO("actions: " << kinds(again));
      CHECK(kinds(again) == "violation");
    }
  }

  // ---- departures ---------------------------------------------------------------------------

  TEST_CASE("pipelines and schedules do not go on without a worker that left") {
    // sync, local_sgd and async do (test_membership.cpp).
    const step_rules rules(4, 4, 0);
    std::vector<std::unique_ptr<step_strategy>> all;
    all.push_back(
        std::make_unique<schedule_strategy>(3, plain(policy_kind::sync, rules), rules, true));
    all.push_back(std::make_unique<pipeline_strategy>(1, 3, rules));
    for (auto& s : all) {
      CAPTURE(std::string(s->name()));
      s->start();
      const auto out = s->on_worker_left(2);
      REQUIRE(kinds(out) == "cannot_continue");
      CHECK(as<act::cannot_continue>(out[0]).rank == 2);
    }
  }

  TEST_CASE("pipeline resumed at step 3: starts there and refuses step 2's events") {
    const step_rules rules(6, 6, 0);
    pipeline_strategy s(1, 2, rules, 3);
    auto out = s.start();
    REQUIRE(kinds(out) == "compute");
    CHECK(as<act::compute>(out[0]).step == 3);
    CHECK(contains(violation_of(s.on_gradient(arr(0, 2))), "expected step 3"));
  }
}
