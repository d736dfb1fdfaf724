// Helpers of the strategy tests (test_*_strategy.cpp): the kinds of a list of actions as text,
// typed access to one action, and events sent by every rank at once.
#pragma once

#include "core/policy/policy_schedule.hpp"
#include "core/policy/step_strategy.hpp"

#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

namespace troupe::test {

static_assert(std::variant_size_v<step_action> == 12, "a new action: name it in kind_name");

inline const char* kind_name(const step_action& a) {
  static const char* const names[] = {"compute",       "combine",   "complete",        "evaluate",
                                      "apply_push",    "hand_out",  "waited",          "recount",
                                      "training_done", "violation", "cannot_continue", "regroup"};
  return names[a.index()];
}

/// The actions' kinds, e.g. "combine complete training_done" ("" for none).
inline std::string kinds(const step_actions& actions) {
  std::string out;
  for (const auto& a : actions)
    out += (out.empty() ? "" : " ") + std::string(kind_name(a));
  return out;
}

template <class A>
inline const A& as(const step_action& a) {
  INFO("the action is " << kind_name(a));
  REQUIRE(std::holds_alternative<A>(a));
  return std::get<A>(a);
}

/// "0 1 2".
inline std::string list(const std::vector<int64_t>& v) {
  std::string out;
  for (auto x : v)
    out += (out.empty() ? "" : " ") + std::to_string(x);
  return out;
}

/// The reason of the single violation `out` must be.
inline std::string violation_of(const step_actions& out) {
  INFO("actions: " << kinds(out));
  REQUIRE(out.size() == 1);
  return as<act::violation>(out[0]).reason;
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

inline arrival arr(int64_t rank, int64_t step, double loss = 0, int64_t samples = 0) {
  return {rank, step, loss, samples};
}

inline void check_part(const step_part& p, int64_t worker, double loss, int64_t samples) {
  CHECK(p.worker == worker);
  CHECK(p.loss == loss);
  CHECK(p.samples == samples);
}

inline void check_outcome(const step_outcome& o, int64_t step, bool evaluate, bool last) {
  CHECK(o.step == step);
  CHECK(o.evaluate == evaluate);
  CHECK(o.last == last);
}

inline policy_schedule plain(policy_kind policy, const step_rules& rules, int64_t period = 8) {
  parallelism_config p;
  p.policy = policy;
  p.period = period;
  return policy_schedule(p, rules);
}

/// Every rank's report of `step`, in rank order; the actions of the last.
inline step_actions report_all(step_strategy& s, int64_t ranks, int64_t step, double loss = 0,
                               int64_t samples = 0) {
  for (int64_t r = 0; r + 1 < ranks; ++r)
    REQUIRE(kinds(s.on_report(arr(r, step, loss, samples))) == "");
  return s.on_report(arr(ranks - 1, step, loss, samples));
}

/// Every rank's gradient of `step`, in rank order; the actions of the last.
inline step_actions gradients_all(step_strategy& s, int64_t ranks, int64_t step) {
  for (int64_t r = 0; r + 1 < ranks; ++r)
    REQUIRE(kinds(s.on_gradient(arr(r, step))) == "");
  return s.on_gradient(arr(ranks - 1, step));
}

/// Every rank's weights after `step`, in rank order; the actions of the last.
inline step_actions weights_all(step_strategy& s, int64_t ranks, int64_t step) {
  for (int64_t r = 0; r + 1 < ranks; ++r)
    REQUIRE(kinds(s.on_weights(arr(r, step, 0, 1))) == "");
  return s.on_weights(arr(ranks - 1, step, 0, 1));
}

}  // namespace troupe::test
