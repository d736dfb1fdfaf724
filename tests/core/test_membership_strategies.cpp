// The strategies when a worker leaves a run that carries on (cluster.on_node_loss "continue"):
// the report barrier completes what every survivor reported, sync drops or completes the step in
// flight, local SGD averages over the live replicas, async releases whoever waited.
#include "core/policy/async_strategy.hpp"
#include "core/policy/local_sgd_strategy.hpp"
#include "core/policy/report_barrier.hpp"
#include "core/policy/sync_strategy.hpp"

#include "strategy_helpers.hpp"

#include <doctest/doctest.h>

using namespace troupe;
using namespace troupe::test;

namespace {

// Each of `ranks`' report of `step`, in that order; the actions of the last.
step_actions report_all_of(step_strategy& s, const std::vector<int64_t>& ranks, int64_t step,
                           int64_t samples) {
  step_actions out;
  for (auto r : ranks)
    out = s.on_report(arr(r, step, 0, samples));
  return out;
}

}  // namespace

TEST_SUITE("membership") {
  TEST_CASE("report barrier: a departure completes what every survivor reported, in order") {
    report_barrier b(3, 0);
    CHECK(!b.add(arr(0, 0, 1.0, 2)).complete);
    CHECK(!b.add(arr(1, 0, 1.0, 2)).complete);
    CHECK(!b.add(arr(0, 1, 1.0, 2)).complete);
    CHECK(!b.add(arr(1, 1, 1.0, 2)).complete);
    CHECK(!b.add(arr(0, 2, 1.0, 2)).complete);
    const auto closed = b.remove(2);
    REQUIRE(closed.size() == 2);
    CHECK(closed[0].first == 0);
    CHECK(closed[1].first == 1);
    CHECK(closed[1].second.size() == 2);
    CHECK(b.add(arr(2, 2)).violation == "worker 2 reported step 2 after it left");
    const auto two = b.add(arr(1, 2, 1.0, 2));
    REQUIRE(two.complete);
    CHECK(two.complete->size() == 2);
    // A regroup at step 4: step 3 closes with what came; the next round starts at 5.
    CHECK(!b.add(arr(0, 3, 1.0, 2)).complete);
    const auto through = b.close_through(4);
    REQUIRE(through.size() == 1);
    CHECK(through[0].first == 3);
    CHECK(through[0].second.size() == 1);
    b.restart({0, 1, 2}, 5);
    CHECK(!b.add(arr(2, 5)).complete);
    CHECK(b.add(arr(0, 4)).violation == "worker 0 reported step 4, which is complete");
  }

  TEST_CASE("sync among workers: a lost rank completes the reported steps, then a regroup") {
    const step_rules rules(10, 10, 0);
    sync_strategy s(3, plain(policy_kind::sync, rules), rules, false);
    s.start();
    report_all(s, 3, 0);
    CHECK(kinds(s.on_report(arr(0, 1))) == "");
    CHECK(kinds(s.on_report(arr(2, 1))) == "");
    // Rank 1 dies after its sum of step 1 but before it reported it: step 1 counts, once.
    auto out = s.on_worker_left(1);
    REQUIRE(kinds(out) == "complete regroup");
    CHECK(as<act::complete>(out[0]).step == 1);
    CHECK(list(as<act::regroup>(out[1]).live) == "0 2");
    CHECK(!as<act::regroup>(out[1]).drain);
    CHECK(kinds(s.on_worker_left(1)) == "");  // already gone
    // Rank 0 completed step 2 (its ring finished), rank 2 did not: the regroup brings both to
    // step 2 (the donor's state), the strategy closes it and computes step 3 with the two.
    // Its report says what the sum it applied held: rank 1's rows too.
    auto summed = arr(0, 2, 0.5, 30);
    summed.sum_rows = 90;
    CHECK(kinds(s.on_report(summed)) == "");
    out = s.resume({0, 2}, 2);
    REQUIRE(kinds(out) == "complete compute");
    const auto& done = as<act::complete>(out[0]);
    CHECK(done.step == 2);
    REQUIRE(done.parts.size() == 1);
    check_part(done.parts[0], 0, 0.5, 30);
    CHECK(done.parts[0].sum_rows == 90);
    CHECK(as<act::compute>(out[1]).step == 3);
    CHECK(list(as<act::compute>(out[1]).ranks) == "0 2");
    // From now on the two complete every step.
    CHECK(kinds(s.on_report(arr(2, 3))) == "");
    CHECK(kinds(s.on_report(arr(0, 3))) == "complete");
  }

  TEST_CASE("survivors too few to go on: the steps they stand past complete before the wait") {
    const step_rules rules(10, 10, 0);
    sync_strategy s(3, plain(policy_kind::sync, rules), rules, false);
    s.start();
    CHECK(kinds(s.on_report(arr(0, 0, 0.5, 20))) == "");
    auto summed = arr(2, 0, 0.5, 20);
    summed.sum_rows = 60;
    CHECK(kinds(s.on_report(summed)) == "");
    // Rank 1's report of step 0 is lost with it after rank 0's and 2's came: step 0 completes
    // when it leaves. Rank 0 then reports step 1, rank 2 does not before the regroup.
    CHECK(kinds(s.on_worker_left(1)) == "complete regroup");
    CHECK(kinds(s.on_report(arr(0, 1, 0.5, 20))) == "");
    // The regroup parks the survivors at step 1 (below min_nodes): step 1 completes now, with
    // the part that came, so a checkpoint of where they stand counts it.
    auto out = s.close_through(1);
    REQUIRE(kinds(out) == "complete");
    CHECK(as<act::complete>(out[0]).step == 1);
    // A replacement later lets them go on: nothing is left to complete.
    out = s.resume({0, 1, 2}, 1);
    REQUIRE(kinds(out) == "compute");
    CHECK(as<act::compute>(out[0]).step == 2);
    // Local SGD's barrier the same; a strategy with no steps open (async) completes none.
    local_sgd_strategy local(2, plain(policy_kind::local_sgd, rules, 4), rules);
    local.start();
    CHECK(kinds(local.on_report(arr(0, 0, 0, 20))) == "");
    CHECK(kinds(local.close_through(0)) == "complete");
    async_strategy async(2, int64_t{0}, false, rules);
    CHECK(kinds(async.close_through(3)) == "");
  }

  TEST_CASE("sync at the driver: the round in flight is dropped whole; resume redoes it") {
    const step_rules rules(4, 4, 0);
    sync_strategy s(3, plain(policy_kind::sync, rules), rules, true);
    s.start();
    gradients_all(s, 3, 0);
    CHECK(kinds(s.on_gradient(arr(0, 1))) == "");
    CHECK(kinds(s.on_gradient(arr(2, 1))) == "");
    // Rank 1 is lost: without its rows the sum would be another batch's gradient.
    auto out = s.on_worker_left(1);
    REQUIRE(kinds(out) == "regroup");
    out = s.resume({0, 2}, 0);
    REQUIRE(kinds(out) == "compute");
    CHECK(as<act::compute>(out[0]).step == 1);
    CHECK(kinds(s.on_gradient(arr(2, 1))) == "");
    out = s.on_gradient(arr(0, 1));
    REQUIRE(kinds(out) == "combine complete");
    CHECK(list(as<act::combine>(out[0]).from) == "0 2");
    CHECK(list(as<act::combine>(out[0]).to) == "0 2");
    CHECK(violation_of(s.on_gradient(arr(1, 2))) == "worker 1 has left and cannot contribute");
  }

  TEST_CASE("sync: the last survivor leaving cannot be carried on") {
    const step_rules rules(4, 4, 0);
    sync_strategy s(1, plain(policy_kind::sync, rules), rules, false);
    s.start();
    CHECK(kinds(s.on_worker_left(0)) == "cannot_continue");
  }

  TEST_CASE("local_sgd: the average is over the live replicas, by rows; the rest drains") {
    const step_rules rules(8, 8, 0);
    local_sgd_strategy s(3, plain(policy_kind::local_sgd, rules, 2), rules);  // averages after 1
    s.start();
    report_all(s, 3, 0, 0, 20);
    CHECK(kinds(s.on_weights(arr(0, 1, 0, 20))) == "");
    CHECK(kinds(s.on_weights(arr(2, 1, 0, 20))) == "");
    auto out = s.on_worker_left(1);
    REQUIRE(kinds(out) == "recount combine regroup");
    // Its 20 rows of step 0 were counted when step 0 completed; its weights never reach an
    // average: they are taken off again.
    const auto& lost = as<act::recount>(out[0]);
    CHECK(lost.rank == 1);
    CHECK(lost.averaged_through == -1);
    REQUIRE(lost.rows.size() == 1);
    CHECK(lost.rows[0] == std::pair<int64_t, int64_t>{0, -20});
    const auto& avg = as<act::combine>(out[1]);
    CHECK(list(avg.from) == "0 2");
    CHECK(list(avg.to) == "0 2");
    REQUIRE(avg.weights.size() == 2);
    CHECK(avg.weights[0] == 0.5);
    CHECK(as<act::regroup>(out[2]).drain);
    // The survivors go on; after the regroup at step 1 each takes half of every batch.
    CHECK(kinds(s.on_report(arr(0, 1, 0, 30))) == "");
    CHECK(kinds(s.on_report(arr(2, 1, 0, 30))) == "complete");
    out = s.resume({0, 2}, 1);
    REQUIRE(kinds(out) == "compute");
    CHECK(as<act::compute>(out[0]).step == 2);
    report_all_of(s, {0, 2}, 2, 30);
    CHECK(kinds(s.on_weights(arr(0, 3, 0, 30))) == "");
    out = s.on_weights(arr(2, 3, 0, 30));
    REQUIRE(kinds(out) == "combine");
    CHECK(list(as<act::combine>(out[0]).to) == "0 2");
  }

  TEST_CASE("local_sgd: a replica lost after an average loses only the rows it trained since") {
    const step_rules rules(8, 8, 0);
    local_sgd_strategy s(3, plain(policy_kind::local_sgd, rules, 2), rules);  // averages after 1
    s.start();
    report_all(s, 3, 0, 0, 20);
    for (int64_t r = 0; r < 2; ++r)
      s.on_weights(arr(r, 1, 0, 20));
    CHECK(kinds(s.on_weights(arr(2, 1, 0, 20))) == "combine");
    // Step 1's reports come after its average (its rows are in the weights already): ranks 0
    // and 1 report it and go on; rank 2 is lost before it reports it.
    report_all(s, 2, 1, 0, 20);
    report_all(s, 2, 2, 0, 20);
    CHECK(kinds(s.on_report(arr(1, 3, 0, 20))) == "");  // reported, not yet handed in...
    auto out = s.on_worker_left(1);                     // ...and lost before the average
    REQUIRE(kinds(out).rfind("recount", 0) == 0);
    const auto& lost = as<act::recount>(out[0]);
    CHECK(lost.averaged_through == 1);
    // Its steps 2 and 3 are open (rank 2 has reported neither), so nothing of them was counted:
    // its parts leave them instead of rows coming off the count.
    CHECK(lost.rows.empty());
    // Rank 2's weights of step 1 are in the average though its report never came: counted.
    // Steps 1 and 2 complete without it, and without rank 1's step 2.
    out = s.on_worker_left(2);
    REQUIRE(kinds(out) == "recount complete complete regroup");
    const auto& averaged = as<act::recount>(out[0]);
    REQUIRE(averaged.rows.size() == 1);
    CHECK(averaged.rows[0] == std::pair<int64_t, int64_t>{1, 20});
    CHECK(as<act::complete>(out[1]).parts.size() == 2);  // step 1: ranks 0 and 1, both averaged
    REQUIRE(as<act::complete>(out[2]).parts.size() == 1);
    CHECK(as<act::complete>(out[2]).parts[0].worker == 0);
    // A second notice of a loss changes nothing.
    CHECK(kinds(s.on_worker_left(1)) == "");
  }

  TEST_CASE("local_sgd: a replica that went on before its average came loses only what followed") {
    // fragment_overlap: each replica reports the step it handed its weights in after, and the
    // next, before the average comes.
    const step_rules rules(8, 8, 0);
    local_sgd_strategy s(2, plain(policy_kind::local_sgd, rules, 2), rules);  // averages after 1
    s.start();
    report_all(s, 2, 0, 0, 20);
    report_all(s, 2, 1, 0, 20);
    report_all(s, 2, 2, 0, 20);
    s.on_weights(arr(0, 1, 0, 20));
    CHECK(kinds(s.on_weights(arr(1, 1, 0, 20))) == "combine");
    const auto out = s.on_worker_left(1);
    REQUIRE(kinds(out).rfind("recount", 0) == 0);
    const auto& lost = as<act::recount>(out[0]);
    CHECK(lost.averaged_through == 1);
    REQUIRE(lost.rows.size() == 1);  // step 1 was reported and averaged: nothing to add back
    CHECK(lost.rows[0] == std::pair<int64_t, int64_t>{2, -20});
  }

  TEST_CASE("async: a lost worker leaves the clock at once; its owed push goes elsewhere") {
    const step_rules rules(2, 2, 0);
    async_strategy s(2, int64_t{0}, false, rules);  // 4 pushes
    s.start();
    // Worker 0 pushes and must wait for worker 1 (bound 0).
    auto out = s.on_push(arr(0, 0), 1.0);
    REQUIRE(kinds(out) == "apply_push");
    // Worker 1 is lost with weights in hand: worker 0 is released at once.
    out = s.on_worker_left(1);
    REQUIRE(kinds(out) == "waited hand_out");
    CHECK(as<act::hand_out>(out[1]).rank == 0);
    // Every push of the run still happens, now all from worker 0.
    int64_t pushes = 1;
    int64_t step = 1;
    for (bool done = false; !done; ++step) {
      out = s.on_push(arr(0, step), 2.0);
      ++pushes;
      done = kinds(out).find("training_done") != std::string::npos;
      REQUIRE(pushes <= 4);
    }
    CHECK(pushes == 4);
  }

  TEST_CASE("async: a replacement enters at the slowest clock and pulls") {
    const step_rules rules(4, 4, 0);
    async_strategy s(2, int64_t{1}, false, rules);
    s.start();
    s.on_push(arr(0, 0), 1.0);
    s.on_worker_left(1);
    const auto out = s.on_worker_joined(1, 2.0);
    REQUIRE(kinds(out) == "hand_out");
    CHECK(as<act::hand_out>(out[0]).rank == 1);
    CHECK(violation_of(s.on_worker_joined(1, 2.0)) == "worker 1 joined without having left");
  }
}
