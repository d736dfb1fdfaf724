// The pure parts of a run that carries on when a node is lost (cluster.on_node_loss
// "continue"): membership and its epochs, the re-split of every batch over the live ranks, the
// regroup round that decides where the survivors go on from, the watchdog's blame, the checked
// state hand-over, and the failure log. The strategies' reactions to a worker that leaves:
// test_membership_strategies.cpp.
#include "core/checkpoint/state_transfer.hpp"
#include "core/config/parse_job.hpp"
#include "core/errors.hpp"
#include "core/policy/membership.hpp"
#include "core/policy/regroup_round.hpp"
#include "core/policy/step_blame.hpp"
#include "core/policy/step_release.hpp"
#include "core/run/replica_digests.hpp"
#include "core/train/failure_log.hpp"

#include "strategy_helpers.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <set>

using namespace troupe;
using namespace troupe::test;

namespace {

// 6 ranks on 3 nodes a, b, c: [0 1] [2 3] [4 5].
membership three_nodes(int64_t min_nodes = 1) {
  return membership({0, 0, 1, 1, 2, 2}, {"a", "b", "c"}, min_nodes);
}

}  // namespace

TEST_SUITE("membership") {
  TEST_CASE("membership: a node is lost with all its ranks, and the epoch moves on") {
    auto m = three_nodes();
    CHECK(m.epoch() == 0);
    CHECK(list(m.live()) == "0 1 2 3 4 5");
    CHECK(m.live_nodes() == 3);
    CHECK(list(m.lose_node_of(3)) == "2 3");
    CHECK(m.epoch() == 1);
    CHECK(list(m.live()) == "0 1 4 5");
    CHECK(!m.is_live(2));
    CHECK(m.position(4) == 2);
    CHECK(m.position(3) == -1);
    CHECK(m.successor(1) == 4);
    CHECK(m.successor(5) == 0);  // the ring wraps over the survivors
    CHECK(m.live_nodes() == 2);
    CHECK(m.missing() == std::vector<std::string>{"b"});
    // Losing it again changes nothing.
    CHECK(m.lose_node_of(2).empty());
    CHECK(m.epoch() == 1);
  }

  TEST_CASE("membership: every global batch is re-split over the live ranks, each row once") {
    for (int64_t batch : {6, 7, 60, 61, 128}) {
      auto m = three_nodes();
      m.lose_node_of(0);
      std::vector<int> covered(static_cast<std::size_t>(batch), 0);
      for (auto r : m.live()) {
        const auto rows = m.rows_of(r, batch);
        for (auto i = rows.begin; i < rows.end; ++i)
          ++covered[static_cast<std::size_t>(i)];
      }
      for (auto c : covered)
        CHECK(c == 1);
      // In rank order: the first live rank starts at row 0, the last ends at the batch's end.
      CHECK(m.rows_of(2, batch).begin == 0);
      CHECK(m.rows_of(5, batch).end == batch);
      // The first batch % live ranks take one row more, as shard_of says.
      CHECK(m.rows_of(2, batch).size() == shard_of(batch, 4, 0).size());
    }
    auto m = three_nodes();
    m.lose_node_of(0);
    CHECK_THROWS_AS(m.rows_of(0, 60), std::invalid_argument);
  }

  TEST_CASE("membership: a replacement takes the ranks of the node lost first") {
    auto m = three_nodes(3);
    m.lose_node_of(4);  // c first
    m.lose_node_of(0);  // then a
    CHECK(m.below_min());
    CHECK(m.has_vacancy());
    CHECK(m.missing() == std::vector<std::string>{"a", "c"});
    const auto slot = m.admit("c2");
    CHECK(slot == 2);
    CHECK(m.is_joining(4));
    CHECK(!m.is_live(4));  // not before the next step boundary
    const auto epoch = m.epoch();
    CHECK(list(m.activate_node(slot)) == "4 5");
    CHECK(m.epoch() == epoch + 1);
    CHECK(m.name_of(2) == "c2");
    CHECK(list(m.live()) == "2 3 4 5");
    CHECK(m.admit("a2") == 0);
    CHECK(m.admit("x") == -1);  // nothing vacant any more
    CHECK(list(m.activate()) == "0 1");
    CHECK(!m.below_min());
    CHECK(m.missing().empty());
  }

  TEST_CASE("membership: a replacement lost before it joined frees its place again") {
    auto m = three_nodes();
    m.lose_node_of(2);
    const auto epoch = m.epoch();
    CHECK(m.admit("b2") == 1);
    CHECK(m.lose_node_of(3).empty());  // its ranks were never live
    CHECK(m.epoch() == epoch);
    CHECK(m.has_vacancy());
    CHECK(m.admit("b3") == 1);
    m.bump();
    CHECK(m.epoch() == epoch + 1);
  }

  TEST_CASE("membership: one process, each rank its own slot") {
    auto m = membership::single_process(3);
    CHECK(m.nodes() == 3);
    CHECK(list(m.lose_node_of(1)) == "1");
    CHECK(list(m.live()) == "0 2");
  }

  TEST_CASE("regroup: survivors one step apart; the one behind takes the state of one ahead") {
    regroup_round round(4, {0, 2, 3}, 1);
    CHECK(round.on_answer(2, 17, true).plan == std::nullopt);
    CHECK(round.on_answer(0, 16, true).plan == std::nullopt);
    const auto r = round.on_answer(3, 17, true);
    REQUIRE(r.violation.empty());
    REQUIRE(r.plan);
    CHECK(r.plan->target == 17);
    CHECK(r.plan->donor == 2);  // the lowest rank at the furthest step
    CHECK(list(r.plan->recipients) == "0");
    CHECK(!round.done());
    CHECK(round.on_taken(0, 16).violation == "worker 0 took the state after step 16, sent was 17");
    CHECK(round.on_taken(0, 17).violation.empty());
    CHECK(round.done());
    CHECK(round.on_taken(0, 17).violation == "worker 0 took the state twice");
  }

  TEST_CASE("regroup: all at one step, and replacements without state") {
    regroup_round round(2, {0, 1, 4, 5}, 1);
    round.on_answer(0, 9, true);
    round.on_answer(1, 9, true);
    round.on_answer(4, -1, false);
    const auto r = round.on_answer(5, -1, false);
    REQUIRE(r.plan);
    CHECK(r.plan->target == 9);
    CHECK(r.plan->donor == 0);
    CHECK(list(r.plan->recipients) == "4 5");

    regroup_round same(3, {1, 2}, 1);
    same.on_answer(1, 5, true);
    const auto s = same.on_answer(2, 5, true);
    REQUIRE(s.plan);
    CHECK(s.plan->recipients.empty());
    CHECK(same.done());
  }

  TEST_CASE("regroup: what cannot be made good is refused") {
    regroup_round apart(1, {0, 1}, 1);
    apart.on_answer(0, 3, true);
    CHECK(apart.on_answer(1, 5, true).violation ==
          "the live workers are 2 steps apart (last applied: 3 to 5), at most 1 can be made good");
    regroup_round nobody(1, {0}, 1);
    CHECK(nobody.on_answer(0, -1, false).violation ==
          "no live worker holds the run's state (every node that trained was lost)");
    regroup_round strangers(7, {0, 1}, 1);
    CHECK(strangers.on_answer(2, 3, true).violation ==
          "worker 2 answered the regroup of epoch 7, which it is not part of");
    strangers.on_answer(0, 3, true);
    CHECK(strangers.on_answer(0, 3, true).violation ==
          "worker 0 answered the regroup of epoch 7 twice");
    CHECK(strangers.on_taken(1, 3).violation == "worker 1 took a state it was not sent");
  }

  TEST_CASE("step release: held releases nothing until it starts again") {
    step_release r(20, 4);
    CHECK(list(r.start(0)) == "0 1 2 3");
    r.hold();
    CHECK(r.held());
    CHECK(r.on_complete(0).empty());
    CHECK(list(r.start(2)) == "2 3 4 5");
    CHECK(!r.held());
    CHECK(list(r.on_complete(2)) == "6");
  }

  TEST_CASE("blame: behind, silent, the ring's slowest link, a missing gradient") {
    step_stall stall;
    stall.behind = {1};
    stall.behind_step = 6;
    auto b = blame_for(stall, {0, 1, 2}, {}, true);
    CHECK(b.what == step_blame::kind::behind);
    CHECK(b.rank == 1);
    CHECK(b.step == 6);
    // All stand together: the one that does not answer.
    stall.behind = {0, 1, 2};
    b = blame_for(stall, {0, 1, 2}, {{0, {7, true, true, 3}}, {2, {7, true, true, 3}}}, true);
    CHECK(b.what == step_blame::kind::silent);
    CHECK(b.rank == 1);
    // All answered inside the ring: worker 2 received nothing, so 1 -> 2 holds it up.
    b = blame_for(stall, {0, 1, 2},
                  {{0, {7, true, true, 4}}, {1, {7, true, true, 2}}, {2, {7, true, true, 0}}},
                  true);
    CHECK(b.what == step_blame::kind::ring_link);
    CHECK(b.rank == 1);
    CHECK(b.link_to == 2);
    CHECK(b.step == 7);
    // A two-node black hole, both starved: the lowest rank's incoming link, from the other.
    b = blame_for(stall, {0, 1}, {{0, {0, true, true, 0}}, {1, {0, true, true, 0}}}, true);
    CHECK(b.rank == 1);
    CHECK(b.link_to == 0);
    // Departed workers are nobody to blame; gradients at the driver: who sent none.
    stall.behind = {3};
    b = blame_for(stall, {0, 1}, {{0, {5, true, false, 0}}, {1, {5, false, false, 0}}}, false, {0});
    CHECK(b.what == step_blame::kind::missing);
    CHECK(b.rank == 1);
  }

  TEST_CASE("state hand-over: chunks reassemble; a flipped byte or a stranger's chunk is refused") {
    const auto weights = at::arange(1000, at::kFloat);
    const std::string optimizer(3000, 'o');
    const auto packed = pack_state(weights, optimizer, 1024);
    CHECK(packed.total_bytes == 4000 + 3000);
    CHECK(packed.chunks.size() == 7);
    const auto feed = [&](state_assembler& a, std::vector<std::string> chunks) {
      std::string problem;
      // In any order: each chunk says where it goes.
      std::vector<int64_t> order;
      for (int64_t i = 0; i < static_cast<int64_t>(chunks.size()); ++i)
        order.push_back(i);
      std::shuffle(order.begin(), order.end(), std::mt19937(7));
      for (auto i : order) {
        problem =
            a.add(i, static_cast<int64_t>(chunks.size()), packed.chunk_bytes, packed.weight_bytes,
                  packed.total_bytes, packed.digest, chunks[static_cast<std::size_t>(i)]);
        if (!problem.empty())
          return problem;
      }
      return problem;
    };
    state_assembler good(1000, 1 << 20);
    CHECK(feed(good, packed.chunks).empty());
    REQUIRE(good.complete());
    at::Tensor w;
    std::string opt;
    CHECK(good.take(w, opt).empty());
    CHECK(at::equal(w, weights));
    CHECK(opt == optimizer);

    auto flipped = packed.chunks;
    flipped[3][17] ^= 1;
    state_assembler bad(1000, 1 << 20);
    CHECK(feed(bad, flipped).empty());
    CHECK(bad.take(w, opt) == "the state's SHA-256 differs from the one it was sent with");

    auto short_chunk = packed.chunks;
    short_chunk[2].pop_back();
    state_assembler cut(1000, 1 << 20);
    CHECK(contains(feed(cut, short_chunk), "1023 bytes, expected 1024"));

    state_assembler other_model(999, 1 << 20);
    CHECK(contains(other_model.add(0, 7, 1024, 4000, 7000, packed.digest, packed.chunks[0]),
                   "weights of 4000 bytes, the model has 3996"));
    state_assembler small_limit(1000, 5000);
    CHECK(contains(small_limit.add(0, 7, 1024, 4000, 7000, packed.digest, packed.chunks[0]),
                   "a state of 7000 bytes (at most 5000)"));
    state_assembler twice(1000, 1 << 20);
    CHECK(twice.add(0, 7, 1024, 4000, 7000, packed.digest, packed.chunks[0]).empty());
    CHECK(contains(twice.add(0, 7, 1024, 4000, 7000, packed.digest, packed.chunks[0]),
                   "arrived twice"));
    CHECK(contains(twice.add(1, 7, 1024, 4000, 7000, "other", packed.chunks[1]),
                   "its header differs"));
    CHECK(contains(twice.add(9, 7, 1024, 4000, 7000, packed.digest, packed.chunks[1]),
                   "no such chunk"));
  }

  TEST_CASE("failure log: detection and recovery, p50 and p99") {
    CHECK(!percentile({}, 50));
    CHECK(*percentile({3.0}, 99) == 3.0);
    CHECK(*percentile({1, 2, 3, 4}, 50) == doctest::Approx(2.5));
    CHECK(*percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99) == doctest::Approx(9.91));
    failure_log log;
    CHECK(log.summary().empty());
    log.lost({"b", {1}, "killed", 7, 10.0, 0.2, std::nullopt});
    log.completed(7, 10.5);  // a step computed before the failure does not count
    log.regrouped(8);
    log.completed(7, 10.6);
    log.completed(8, 11.3);
    log.lost({"c", {2}, "stopped", 20, 30.0, 5.0, std::nullopt});
    log.recover_at_next_step();
    log.completed(20, 31.0);
    log.joined({"b2", {1}, 25, 33.0});
    const auto j = log.summary();
    REQUIRE(j.at("failures").size() == 2);
    CHECK(j.at("failures")[0].at("recovery_s").get<double>() == doctest::Approx(1.5));
    CHECK(j.at("failures")[1].at("recovery_s").get<double>() == doctest::Approx(6.0));
    CHECK(j.at("failure_times").at("detection_p50_s").get<double>() == doctest::Approx(2.6));
    CHECK(j.at("failure_times").at("recovery_p99_s").get<double>() == doctest::Approx(5.955));
    CHECK(j.at("joins")[0].at("node") == "b2");
    failure_log back;
    back.restore(log.save());
    CHECK(back.summary() == j);
  }

  TEST_CASE("job file: on_node_loss, min_nodes and replacement_timeout_s") {
    auto job = parse_job(nlohmann::json::parse(
        R"({"parallelism": {"replicas": 3}, "cluster": {"nodes": 3, "on_node_loss": "continue",
            "min_nodes": 2, "replacement_timeout_s": 20}})"));
    CHECK(job.cluster.carries_on());
    CHECK(job.cluster.min_nodes == 2);
    CHECK(job.cluster.replacement_timeout_s == 20);
    const auto defaults = parse_job(
        nlohmann::json::parse(R"({"parallelism": {"replicas": 2}, "cluster": {"nodes": 2}})"));
    CHECK(defaults.cluster.on_node_loss == node_loss_policy::fail);
    CHECK(defaults.cluster.min_nodes == 1);
    const auto problems = [](const char* text) {
      try {
        parse_job(nlohmann::json::parse(text));
      } catch (const job_error& e) {
        std::string all;
        for (const auto& p : e.problems())
          all += p + "\n";
        return all;
      }
      return std::string();
    };
    CHECK(contains(problems(R"({"cluster": {"on_node_loss": "continue"}})"),
                   "/cluster/on_node_loss: needs cluster.nodes"));
    CHECK(contains(
        problems(
            R"({"parallelism": {"replicas": 2}, "cluster": {"nodes": 2, "on_node_loss": "go"}})"),
        "/cluster/on_node_loss"));
    CHECK(contains(
        problems(R"({"parallelism": {"replicas": 2}, "cluster": {"nodes": 2, "min_nodes": 3}})"),
        "/cluster/min_nodes: must be at most cluster.nodes (2), got 3"));
    CHECK(contains(
        problems(
            R"({"parallelism": {"policy": "schedule", "replicas": 2, "phases": [{"policy": "sync", "steps": 2}, {"policy": "local_sgd"}]},
                              "cluster": {"nodes": 2, "on_node_loss": "continue"}})"),
        "\"continue\" supports the sync, local_sgd and async policies"));
  }
}

TEST_SUITE("membership") {
  TEST_CASE(
      "after a join, the replicas' digests of their weights agree or the one that differs "
      "is named") {
    const auto weights = at::arange(10, at::kFloat);
    const auto same = weights_digest(weights);
    CHECK(same == weights_digest(weights.clone()));
    CHECK(same.size() == 64);
    auto flipped = weights.clone();
    flipped[3] = std::nextafter(3.0f, 4.0f);  // one ulp apart
    const auto other = weights_digest(flipped);
    CHECK(other != same);
    // A strided view is hashed by its values, as the contiguous copy the worker would send.
    CHECK(weights_digest(at::arange(20, at::kFloat).slice(0, 0, 20, 2)) ==
          weights_digest(at::arange(20, at::kFloat).slice(0, 0, 20, 2).contiguous()));
    const auto label = [](int64_t r) { return "worker " + std::to_string(r); };

    SUBCASE("all equal: complete, no disagreement, the shared digest") {
      replica_digest_check check(3, 41, {2, 0, 1});
      CHECK(check.ranks() == std::vector<int64_t>{0, 1, 2});
      CHECK(check.add(0, 41, same));
      CHECK_FALSE(check.complete());
      CHECK_FALSE(check.disagreement(label).empty());  // not every replica answered
      CHECK(check.add(2, 41, same));
      CHECK(check.add(1, 41, same));
      CHECK(check.complete());
      CHECK(check.disagreement(label).empty());
      CHECK(check.digest() == same);
    }
    SUBCASE("one differs: named against the first") {
      replica_digest_check check(3, 41, {0, 1, 2});
      check.add(0, 41, same);
      check.add(1, 41, same);
      check.add(2, 41, other);
      const auto problem = check.disagreement(label);
      CHECK(problem.find("worker 2 holds weights different from worker 0's after step 41") == 0);
    }
    SUBCASE("a replica at another step is named, whatever its digest") {
      replica_digest_check check(3, 41, {0, 1});
      check.add(0, 41, same);
      check.add(1, 40, same);
      CHECK(check.disagreement(label) ==
            "worker 1 reported its weights after step 40, expected after step 41");
    }
    SUBCASE("unasked ranks and repeats are refused and change nothing") {
      replica_digest_check check(3, 41, {0, 1});
      CHECK_FALSE(check.add(5, 41, same));
      CHECK(check.add(0, 41, same));
      CHECK_FALSE(check.add(0, 41, other));
      CHECK(check.add(1, 41, same));
      CHECK(check.disagreement(label).empty());
    }
    CHECK_THROWS_AS(replica_digest_check(3, 41, {}), std::invalid_argument);
  }
}  // TEST_SUITE
