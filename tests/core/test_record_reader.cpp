// The records of metrics.jsonl read back as their structs: every kind the writer writes parses
// back to what was written, field by field; wrong types are no record, missing fields keep
// their defaults, aggregated records say how many they stand for.
#include "core/metrics/record_reader.hpp"

#include <doctest/doctest.h>

using namespace troupe;
using namespace troupe::records;

namespace {

// Written, then read back as the same kind: equal when their JSON is.
template <class R>
void round_trip(const R& r) {
  const auto written = to_json(r);
  const auto back = parse_record(written);
  REQUIRE_MESSAGE(back.has_value(), written.dump());
  REQUIRE_MESSAGE(std::holds_alternative<R>(*back), written.dump());
  CHECK(to_json(std::get<R>(*back)) == written);
}

}  // namespace

TEST_SUITE("report") {
  TEST_CASE("every record kind reads back as what was written") {
    round_trip(step{7, 1, 0.5, 64, 1234.5, 0.02, 0.001, 3.5, 0.05});
    round_trip(worker_step{7, 2, 0.01, 0.002, 0.0003});
    round_trip(stage_step{7, 3, 1, 2, 0.04, 0.01, 5});
    eval test_eval;
    test_eval.step = 9;
    test_eval.loss = 0.3;
    test_eval.accuracy = 0.88;
    test_eval.samples = 10000;
    round_trip(test_eval);
    eval validation = test_eval;
    validation.split = "validation";
    validation.weights = "best";
    round_trip(validation);
    eval regression = test_eval;
    regression.metric = "mse";
    round_trip(regression);
    round_trip(member_eval{9, 3, "validation", 0.4, 0.8, 2.0});
    round_trip(applied{1, 4, 12, 2});
    round_trip(waited{1, 4, 0.25});
    round_trip(phase{20, "local_sgd", 1.5});
    round_trip(failure{"a replica failed", 2.5});
    round_trip(checkpoint{19, 2828280, 0.005, "", 1.0});
    round_trip(checkpoint{19, 0, 0.001, "DIR/x: cannot write: No space left on device", 1.0});
    round_trip(resumed{49, "DIR/checkpoints/step-49", 1, 0.0});
    round_trip(node_lost{"b", {2, 3}, "its node's connection was lost", 17, 0.8, 2, 1.7e9, 4.0});
    round_trip(step_redone{17, 1, 4.1});
    round_trip(node_joined{"c", {2, 3}, 30, 123456, 2, 9.0});
    round_trip(replicas_checked{{0, 1, 2, 3}, 30, 2, "ab12", 9.5});
    round_trip(confusion{99, "test", 2, {5, 1, 0, 4}, "", 3.0});
    round_trip(confusion{99, "test", 3, {1, 0, 0, 0, 0, 0, 2, 0, 1}, "best", 3.0});
  }

  TEST_CASE("a confusion record: each class's accuracy, and no record for a matrix of other size") {
    const confusion c{9, "test", 3, {8, 2, 0, 1, 3, 0, 0, 0, 0}, "", 1.0};
    const auto accuracy = per_class_accuracy(c);
    REQUIRE(accuracy.size() == 3);
    CHECK(*accuracy[0] == doctest::Approx(0.8));
    CHECK(*accuracy[1] == doctest::Approx(0.75));
    CHECK(!accuracy[2]);  // no rows of class 2
    CHECK(to_json(c)["accuracy"] == nlohmann::json::parse("[0.8, 0.75, null]"));
    auto line = to_json(c);
    line["counts"] = {1, 2, 3};
    CHECK_FALSE(parse_record(line));
    line["counts"] = {1, 2, 3, 4, 5, 6, 7, 8, -9};
    CHECK_FALSE(parse_record(line));
    line["classes"] = 0;
    line["counts"] = nlohmann::json::array();
    CHECK_FALSE(parse_record(line));
  }

  TEST_CASE("a line that is no record, or a field of another type, reads as none") {
    CHECK_FALSE(parse_record(nlohmann::json::parse(R"([1, 2])")));
    CHECK_FALSE(parse_record(nlohmann::json::parse(R"({"step": 3})")));
    CHECK_FALSE(parse_record(nlohmann::json::parse(R"({"event": "later_kind", "x": 1})")));
    CHECK_FALSE(parse_record(nlohmann::json::parse(R"({"event": "step", "loss": "low"})")));
    CHECK_FALSE(parse_record(nlohmann::json::parse(R"({"event": "step", "step": 1e300})")));
    CHECK_FALSE(
        parse_record(nlohmann::json::parse(R"({"event": "node_lost", "workers": [1, "x"]})")));
    CHECK(is_known_event("replicas_checked"));
    CHECK_FALSE(is_known_event("later_kind"));
    // Fields an earlier version did not write keep their defaults.
    const auto old =
        parse_record(nlohmann::json::parse(R"({"event": "step", "step": 4, "loss": 1.5})"));
    REQUIRE(old);
    CHECK(std::get<step>(*old).step == 4);
    CHECK(std::get<step>(*old).lr == 0);
    // Aggregated records say how many they stand for.
    CHECK(records_in(nlohmann::json::parse(R"({"event": "step", "steps": 8})")) == 8);
    CHECK(records_in(nlohmann::json::parse(R"({"event": "applied", "count": 3})")) == 3);
    CHECK(records_in(nlohmann::json::parse(R"({"event": "applied", "count": -3})")) == 1);
    CHECK(records_in(nlohmann::json::parse(R"({"event": "waited"})")) == 1);
  }
}
