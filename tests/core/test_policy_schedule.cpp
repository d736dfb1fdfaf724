// The policy of each step: plain policies, schedules of phases, and when local SGD averages.
#include "core/policy/policy_schedule.hpp"

#include <doctest/doctest.h>

using namespace troupe;

namespace {

job_config local_job(int64_t period, int64_t eval_interval) {
  job_config job;
  job.parallelism.policy = policy_kind::local_sgd;
  job.parallelism.period = period;
  job.training.eval_interval = eval_interval;
  return job;
}

policy_schedule schedule_of(const job_config& job, int64_t total_steps, int64_t steps_per_epoch) {
  return policy_schedule(job.parallelism,
                         step_rules(total_steps, steps_per_epoch, job.training.eval_interval));
}

std::vector<int64_t> averaging_steps(const policy_schedule& s, int64_t total) {
  std::vector<int64_t> out;
  for (int64_t step = 0; step < total; ++step)
    if (s.averages_after(step))
      out.push_back(step);
  return out;
}

phase_config phase(policy_kind policy, int64_t steps, int64_t period = 8) {
  phase_config p;
  p.policy = policy;
  p.steps = steps;
  p.period = period;
  return p;
}

}  // namespace

TEST_SUITE("policy_schedule") {
  TEST_CASE("a plain policy is one phase over the whole run") {
    job_config job;
    const auto s = schedule_of(job, 10, 5);
    REQUIRE(s.phases().size() == 1);
    CHECK(s.policy_at(9) == policy_kind::sync);
    CHECK(!s.switches_after(4));
    CHECK(averaging_steps(s, 10).empty());
    CHECK(s.next_step_under(policy_kind::sync, 3) == 3);
    CHECK(s.next_step_under(policy_kind::local_sgd, 0) == 10);
  }

  TEST_CASE("local_sgd averages every period, at evaluations and after the last step") {
    // period 4, 20 steps, 10 per epoch, evaluation every epoch.
    const auto s = schedule_of(local_job(4, 0), 20, 10);
    CHECK(averaging_steps(s, 20) == std::vector<int64_t>{3, 7, 9, 11, 15, 19});
    CHECK(s.next_averaging_step(0) == 3);
    CHECK(s.next_averaging_step(8) == 9);
    CHECK(s.next_averaging_step(16) == 19);
    CHECK(!s.averages_momenta_after(3));
    auto with_momenta = local_job(4, 0);
    with_momenta.parallelism.average_momenta = true;
    CHECK(schedule_of(with_momenta, 20, 10).averages_momenta_after(3));
  }

  TEST_CASE("streaming fragments: each every period, staggered; evaluations average them all") {
    // period 8, 2 fragments, 40 steps, 20 per epoch, evaluation every epoch.
    auto job = local_job(8, 0);
    job.parallelism.fragments = 2;
    const auto s = schedule_of(job, 40, 20);
    CHECK(s.fragments() == 2);
    std::vector<std::pair<int64_t, int64_t>> seen;  // (step, fragment or -1: all)
    for (int64_t step = 0; step < 40; ++step)
      if (s.averages_after(step))
        seen.emplace_back(step, s.fragment_after(step));
    // Fragment 0 where the whole model would average (7, 15, 23, 31), fragment 1 half a period
    // later (3, 11, 27, 35); 19 (an evaluation) and 39 (the last step) average both.
    const std::vector<std::pair<int64_t, int64_t>> expected = {
        {3, 1}, {7, 0}, {11, 1}, {15, 0}, {19, -1}, {23, 0}, {27, 1}, {31, 0}, {35, 1}, {39, -1}};
    CHECK(seen == expected);
    CHECK(s.next_averaging_step(4) == 7);
    CHECK(s.fragment_after(5) == -1);  // no averaging at all
    // Four fragments of a period of 8: one every 2 steps, in the order 0, 3, 2, 1 of offsets.
    job.parallelism.fragments = 4;
    const auto four = schedule_of(job, 16, 100);
    std::vector<int64_t> order;
    for (int64_t step = 0; step < 15; ++step)
      if (four.averages_after(step))
        order.push_back(four.fragment_after(step));
    CHECK(order == std::vector<int64_t>{3, 2, 1, 0, 3, 2, 1});
    CHECK(four.fragment_after(15) == -1);  // the last step averages every fragment
    // Without fragments nothing changes.
    CHECK(schedule_of(local_job(4, 0), 20, 10).fragment_after(3) == -1);
  }

  TEST_CASE(
      "fragment overlap: merged overlap steps on or before the next average; in flight till") {
    // period 8, 2 fragments (3, 7, 11, 15, then 19 averages all), overlap 2, evaluation at 19.
    auto job = local_job(8, 0);
    job.parallelism.fragments = 2;
    job.parallelism.fragment_overlap = 2;
    const auto s = schedule_of(job, 40, 20);
    CHECK(s.fragment_overlap() == 2);
    CHECK(s.merge_before(3) == 5);
    CHECK(s.merge_before(7) == 9);
    std::vector<int64_t> in_flight;
    for (int64_t step = 0; step < 40; ++step)
      if (s.fragment_in_flight(step))
        in_flight.push_back(step);
    // After 3 and 4 (merged before 5), 7 and 8, ...; never at 19 (every fragment averaged) or
    // at the last step.
    CHECK(in_flight ==
          std::vector<int64_t>{3, 4, 7, 8, 11, 12, 15, 16, 23, 24, 27, 28, 31, 32, 35, 36});
    // Overlap 4 (the most for one every 4 steps): merged just before the next fragment's step;
    // 19 averages everything, so 18's... fragment 15's average is merged before 19, not 19.
    job.parallelism.fragment_overlap = 4;
    const auto full = schedule_of(job, 40, 20);
    CHECK(full.merge_before(3) == 7);
    CHECK(full.merge_before(15) == 19);
    CHECK(full.fragment_in_flight(18));
    CHECK(!full.fragment_in_flight(19));
    // Overlap 0: nothing is ever in flight.
    job.parallelism.fragment_overlap = 0;
    CHECK(!schedule_of(job, 40, 20).fragment_in_flight(3));
  }

  TEST_CASE("schedule phases follow each other and switch exactly at their boundaries") {
    job_config job;
    job.parallelism.policy = policy_kind::schedule;
    job.parallelism.phases = {phase(policy_kind::sync, 5), phase(policy_kind::local_sgd, 6, 4),
                              phase(policy_kind::sync, 0)};
    job.training.eval_interval = 1000;
    const auto s = schedule_of(job, 20, 100);
    REQUIRE(s.phases().size() == 3);
    CHECK(s.policy_at(4) == policy_kind::sync);
    CHECK(s.policy_at(5) == policy_kind::local_sgd);
    CHECK(s.policy_at(10) == policy_kind::local_sgd);
    CHECK(s.policy_at(11) == policy_kind::sync);
    CHECK(s.switches_after(4));
    CHECK(s.switches_after(10));
    CHECK(!s.switches_after(19));
    // Local steps 5..10: average 4 steps into the phase (8) and at its end (10).
    CHECK(averaging_steps(s, 20) == std::vector<int64_t>{8, 10});
    // Leaving local SGD for sync averages the momenta too: sync needs identical replicas.
    CHECK(!s.averages_momenta_after(8));
    CHECK(s.averages_momenta_after(10));
    CHECK(s.next_step_under(policy_kind::sync, 5) == 11);
    CHECK(s.next_step_under(policy_kind::sync, 12) == 12);
    CHECK(s.next_averaging_step(11) == 20);
  }

  TEST_CASE("phases beyond the run's end are left out; the last one started runs to the end") {
    job_config job;
    job.parallelism.policy = policy_kind::schedule;
    job.parallelism.phases = {phase(policy_kind::sync, 8), phase(policy_kind::local_sgd, 0, 2)};
    const auto s = schedule_of(job, 6, 100);
    REQUIRE(s.phases().size() == 1);
    CHECK(s.phases()[0].end_step == 6);
    CHECK(s.policy_at(5) == policy_kind::sync);
  }
}
