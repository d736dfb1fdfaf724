// The membership machine (core/policy/membership_machine.hpp): losses, regroups, waits and
// joins as events in and actions out, without actors. The last cases replay shuffled orders
// of answers, hand-overs and further losses and check that every order ends the same way.
#include "core/policy/membership_machine.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <random>

using namespace troupe;

namespace {

// 8 ranks on 4 nodes a, b, c, d: [0 1] [2 3] [4 5] [6 7].
membership_machine four_nodes(int64_t min_nodes = 1, bool parameter_server = false) {
  return membership_machine(membership({0, 0, 1, 1, 2, 2, 3, 3}, {"a", "b", "c", "d"}, min_nodes),
                            true, parameter_server);
}

template <class A>
std::vector<A> all_of(const member_actions& actions) {
  std::vector<A> found;
  for (const auto& a : actions)
    if (const auto* x = std::get_if<A>(&a))
      found.push_back(*x);
  return found;
}

template <class A>
A only(const member_actions& actions) {
  const auto found = all_of<A>(actions);
  REQUIRE(found.size() == 1);
  return found.front();
}

using ranks = std::vector<int64_t>;

// Answers the regroup announced in `actions` with every live rank at `applied[rank]`.
member_actions answer_all(membership_machine& m, const member_actions& actions,
                          const std::function<int64_t(int64_t)>& applied) {
  const auto note = only<mact::announce>(actions);
  member_actions last;
  for (auto r : note.live)
    last = m.on_answer(note.epoch, r, applied(r), true);
  return last;
}

}  // namespace

TEST_SUITE("membership") {
  TEST_CASE("machine: a lost node's workers are given up on and its live ranks leave") {
    auto m = four_nodes();
    auto out = m.lose_node(3, true);
    const auto g = only<mact::give_up>(out);
    CHECK(g.ranks == ranks{2, 3});
    CHECK(g.tell_leave);
    const auto lost = only<mact::node_lost>(out);
    CHECK(lost.node == 1);
    CHECK(lost.ranks == ranks{2, 3});
    CHECK(lost.in_flight == 0);
    CHECK(lost.live_nodes == 3);
    CHECK(all_of<mact::worker_left>(out).size() == 2);
    CHECK(m.loss_pending());
    CHECK(m.after_loss().empty());  // enough nodes, nothing under way
    CHECK_FALSE(m.loss_pending());
    CHECK(m.label(2) == "node b");
  }

  TEST_CASE("machine: sync regroup after a loss: answers, the state to those behind, resume") {
    auto m = four_nodes();
    m.step_completed(4);
    m.lose_node(7, false);
    auto out = m.want_regroup(false, 5);  // sync abandons step 5 at once
    CHECK(std::holds_alternative<mact::hold_release>(out.front()));
    const auto note = only<mact::announce>(out);
    CHECK(note.live == ranks{0, 1, 2, 3, 4, 5});
    CHECK(note.epoch == m.announced_epoch());
    CHECK_FALSE(m.may_release());
    // Rank 1's ring finished step 5 before the loss; the others did not.
    out = answer_all(m, out, [](int64_t r) { return r == 1 ? 5 : 4; });
    const auto ask = only<mact::ask_handover>(out);
    CHECK(ask.donor == 1);
    CHECK(all_of<mact::end_run>(m.on_handover(note.epoch, 1, 4)).size() == 1);  // wrong step
    const auto pass = only<mact::pass_state>(m.on_handover(note.epoch, 1, 5));
    CHECK(pass.recipients == ranks{0, 2, 3, 4, 5});
    for (auto r : pass.recipients) {
      out = m.on_taken(note.epoch, r, 5);
      CHECK(all_of<mact::regroup_ready>(out).size() == (r == 5 ? 1u : 0u));
    }
    const auto resume = only<mact::resume>(m.complete());
    CHECK(resume.target == 5);
    CHECK(resume.live == note.live);
    CHECK(resume.redo);
    CHECK(m.may_release());
  }

  TEST_CASE("machine: local SGD drains the released steps before it regroups") {
    auto m = four_nodes();
    m.lose_node(0, false);
    CHECK(all_of<mact::announce>(m.want_regroup(true, 3)).empty());
    CHECK(all_of<mact::announce>(m.step_completed(2)).empty());
    CHECK_FALSE(m.may_release());
    const auto out = m.step_completed(3);
    CHECK(only<mact::announce>(out).live == ranks{2, 3, 4, 5, 6, 7});
    const auto last = answer_all(m, out, [](int64_t) { return 3; });
    CHECK(all_of<mact::regroup_ready>(last).size() == 1);
    CHECK_FALSE(only<mact::resume>(m.complete()).redo);
  }

  TEST_CASE("machine: below min_nodes the survivors park, wait, and give up at the deadline") {
    auto m = four_nodes(4);
    m.step_completed(1);
    m.lose_node(4, false);
    const auto wait = only<mact::wait_for_nodes>(m.after_loss());
    CHECK(m.waiting());
    auto out = m.want_regroup(false, 2);
    answer_all(m, out, [](int64_t) { return 1; });
    CHECK(only<mact::park>(m.complete()).target == 1);
    CHECK_FALSE(m.may_release());
    CHECK(m.on_wait_deadline(wait.wait_id + 1).empty());  // an older wait's deadline
    const auto give_up = only<mact::give_up_waiting>(m.on_wait_deadline(wait.wait_id));
    CHECK(give_up.parked_at == 1);
    CHECK(give_up.live == ranks{0, 1, 2, 3, 6, 7});
  }

  TEST_CASE("machine: a replacement takes the lost node's ranks, gets the state, is checked") {
    auto m = four_nodes(4);
    m.step_completed(6);
    m.lose_node(2, false);
    m.after_loss();
    answer_all(m, m.want_regroup(false, 7), [](int64_t) { return 6; });
    m.complete();  // parked at 6
    CHECK(m.admit("e") == ranks{2, 3});
    CHECK(m.admit("f").empty());  // no node is vacant
    CHECK(only<mact::reject_worker>(m.worker_started(5, 6)).rank == 5);
    CHECK(m.worker_started(2, 6).empty());  // its other worker is not up yet
    auto out = m.worker_started(3, 6);
    const auto note = only<mact::announce>(out);
    CHECK(note.live == ranks{0, 1, 2, 3, 4, 5, 6, 7});
    // The newcomers answer that they hold a state; they hold none of the run's.
    out = answer_all(m, out, [](int64_t) { return 6; });
    const auto donor = only<mact::ask_handover>(out).donor;
    const auto pass = only<mact::pass_state>(m.on_handover(note.epoch, donor, 6));
    CHECK(pass.recipients == ranks{2, 3});
    m.on_taken(note.epoch, 2, 6);
    CHECK(all_of<mact::regroup_ready>(m.on_taken(note.epoch, 3, 6)).size() == 1);
    out = m.complete();
    const auto joined = only<mact::node_joined>(out);
    CHECK(joined.ranks == ranks{2, 3});
    CHECK(joined.first_step == 7);
    CHECK(only<mact::ask_digests>(out).ranks == note.live);  // one state: every replica
    CHECK(only<mact::resume>(out).target == 6);
    CHECK_FALSE(m.waiting());
  }

  TEST_CASE("machine: async replacements join at once and end the wait") {
    auto m = four_nodes(4, true);
    m.step_completed(9);
    m.lose_node(6, false);
    CHECK(all_of<mact::wait_for_nodes>(m.after_loss()).size() == 1);
    m.admit("e");
    m.worker_started(6, 9);
    const auto out = m.worker_started(7, 9);
    CHECK(only<mact::node_joined>(out).first_step == 10);
    CHECK(all_of<mact::worker_joined>(out).size() == 2);
    CHECK(all_of<mact::end_wait>(out).size() == 1);
    CHECK_FALSE(m.waiting());
    CHECK(m.members().is_live(7));
  }

  TEST_CASE("machine: a loss during a regroup starts it again; the old answers are dropped") {
    auto m = four_nodes();
    m.lose_node(0, false);
    const auto first = only<mact::announce>(m.want_regroup(false, 0));
    m.on_answer(first.epoch, 2, -1, true);
    auto out = m.lose_node(4, false);
    out = m.after_loss();
    const auto second = only<mact::announce>(out);
    CHECK(second.epoch > first.epoch);
    CHECK(second.live == ranks{2, 3, 6, 7});
    CHECK(std::holds_alternative<mact::drop>(m.on_answer(first.epoch, 3, -1, true).front()));
    // A replacement lost before it joined gives nothing up but its workers.
    m.admit("e");
    out = m.lose_node(0, false);
    CHECK(all_of<mact::lost_before_join>(out).size() == 1);
    CHECK(all_of<mact::node_lost>(out).empty());
    CHECK(only<mact::announce>(out).epoch > second.epoch);  // the round under way restarts
  }

  TEST_CASE(
      "machine: shuffled answers, hand-overs and losses always end in a resume of the last "
      "regroup") {
    for (unsigned seed = 0; seed < 300; ++seed) {
      std::mt19937 rng(seed);
      auto m = four_nodes();
      m.step_completed(10);
      std::deque<std::function<member_actions()>> pending;
      std::vector<mact::resume> resumes;
      int64_t losses = 0, last_epoch = -1;
      std::function<void(const member_actions&)> feed = [&](const member_actions& actions) {
        for (const auto& a : actions) {
          REQUIRE_FALSE(std::holds_alternative<mact::end_run>(a));
          if (const auto* note = std::get_if<mact::announce>(&a)) {
            CHECK(note->epoch > last_epoch);
            last_epoch = note->epoch;
            for (auto r : note->live) {  // each survivor finished step 11 or not, at random
              const auto applied = (rng() % 2 == 0) ? 11 : 10;
              pending.push_back(
                  [&m, e = note->epoch, r, applied] { return m.on_answer(e, r, applied, true); });
            }
          } else if (const auto* ask = std::get_if<mact::ask_handover>(&a)) {
            pending.push_back([&m, e = ask->epoch, d = ask->donor] {
              const auto target = m.round() && m.round()->plan() ? m.round()->plan()->target : 0;
              return m.on_handover(e, d, target);
            });
          } else if (const auto* pass = std::get_if<mact::pass_state>(&a)) {
            for (auto r : pass->recipients)
              pending.push_back(
                  [&m, e = pass->epoch, r, s = pass->step] { return m.on_taken(e, r, s); });
          } else if (std::holds_alternative<mact::regroup_ready>(a)) {
            feed(m.complete());
          } else if (const auto* resume = std::get_if<mact::resume>(&a)) {
            CHECK(resume->epoch == last_epoch);  // never the resume of an overtaken regroup
            resumes.push_back(*resume);
          }
        }
      };
      feed(m.lose_node(1, false));
      feed(m.want_regroup(false, 11));
      feed(m.after_loss());
      while (!pending.empty()) {
        // Now and then another node is lost mid-regroup (at most two more, one node stays).
        if (losses < 2 && rng() % 6 == 0) {
          const auto& live = m.members().live();
          const auto victim = live[rng() % live.size()];
          if (m.members().live_nodes() > 1) {
            ++losses;
            feed(m.lose_node(victim, false));
            feed(m.want_regroup(false, 11));
            feed(m.after_loss());
          }
        }
        std::uniform_int_distribution<std::size_t> pick(0, pending.size() - 1);
        const auto i = pick(rng);
        auto event = std::move(pending[i]);
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
        feed(event());
      }
      INFO("seed " << seed);
      REQUIRE_FALSE(resumes.empty());  // overtaken regroups were dropped, the last completed
      CHECK(resumes.back().live == m.members().live());
      CHECK(resumes.back().target >= 10);
      CHECK(resumes.back().target <= 11);
      CHECK(m.may_release());
      CHECK_FALSE(m.round());
    }
  }
}
