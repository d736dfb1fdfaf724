// The plan as the coordinator ships it to nodes (core/run/plan_wire) and what a node checks
// before it takes it (core/run/node_fit): every kind of run survives the trip field for field,
// with the same digest; a plan changed on the way, or one this build cannot read, is caught; a
// node whose data or devices differ from the plan's says which fact.
#include "core/config/parse_job.hpp"
#include "core/data/data_source.hpp"
#include "core/errors.hpp"
#include "core/run/node_fit.hpp"
#include "core/run/plan_wire.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>

using namespace troupe;
using nlohmann::json;

namespace {

json synthetic_job(json parallelism) {
  return {{"name", "wire"},
          {"data", {{"type", "synthetic"}, {"train_samples", 256}, {"test_samples", 64}}},
          {"model", {{"type", "mlp"}, {"hidden", {16, 8}}}},
          {"training", {{"batch_size", 32}, {"steps", 12}, {"eval_interval", 5}}},
          {"parallelism", std::move(parallelism)}};
}

run_plan plan_of(const json& job_json) {
  const auto job = parse_job(job_json);
  return make_run_plan(job, describe_data(job.data));
}

// Every decision that travels, compared one by one (the schedule is rebuilt, so its phases are).
void check_same(const run_plan& a, const run_plan& b) {
  CHECK(to_json(a.job) == to_json(b.job));
  CHECK(a.job.model.input_shape == b.job.model.input_shape);
  CHECK(a.data.train_rows == b.data.train_rows);
  CHECK(a.data.row_shape == b.data.row_shape);
  CHECK(a.model.parameters == b.model.parameters);
  CHECK(a.model.parameter_layout == b.model.parameter_layout);
  CHECK(a.model.layers.size() == b.model.layers.size());
  CHECK(a.mode == b.mode);
  CHECK(a.rules.total_steps() == b.rules.total_steps());
  CHECK(a.rules.eval_interval() == b.rules.eval_interval());
  REQUIRE(a.schedule.phases().size() == b.schedule.phases().size());
  for (std::size_t i = 0; i < a.schedule.phases().size(); ++i) {
    CHECK(a.schedule.phases()[i].first_step == b.schedule.phases()[i].first_step);
    CHECK(a.schedule.phases()[i].config.policy == b.schedule.phases()[i].config.policy);
  }
  CHECK(a.workers == b.workers);
  CHECK(a.rows_per_replica == b.rows_per_replica);
  CHECK(a.devices.workers == b.devices.workers);
  CHECK(a.gradients == b.gradients);
  CHECK(a.ring.bucket_elements == b.ring.bucket_elements);
  CHECK(a.stages.size() == b.stages.size());
  CHECK(a.micro_batch_rows == b.micro_batch_rows);
  CHECK(a.boundary_floats_per_row == b.boundary_floats_per_row);
  CHECK(a.threads_total == b.threads_total);
  CHECK(a.hardware_threads == b.hardware_threads);
}

}  // namespace

TEST_SUITE("plan_wire") {
  TEST_CASE("every kind of run's plan arrives whole, with the digest it left with") {
    const json runs[] = {
        {{"replicas", 3}, {"policy", "sync"}},
        {{"replicas", 2}, {"policy", "async"}, {"max_staleness", 2}},
        {{"replicas", 2}, {"stages", 2}, {"micro_batches", 4}},
        {{"replicas", 2},
         {"policy", "schedule"},
         {"phases",
          {{{"policy", "local_sgd"}, {"period", 2}, {"steps", 6}}, {{"policy", "sync"}}}}},
    };
    for (const auto& parallelism : runs) {
      CAPTURE(parallelism.dump());
      const auto sent = plan_of(synthetic_job(parallelism));
      const auto text = plan_to_json(sent).dump();
      const auto received = plan_from_json(json::parse(text));
      check_same(sent, received);
      CHECK(plan_digest(received) == plan_digest(sent));
    }
    auto ensemble = synthetic_job({{"replicas", 1}});
    ensemble["ensemble"] = {{"members", 3}};
    const auto sent = plan_of(ensemble);
    const auto received = plan_from_json(plan_to_json(sent));
    check_same(sent, received);
    CHECK(received.mode == run_mode::ensemble);
  }

  TEST_CASE(
      "a plan that changed on the way has another digest; one this troupe cannot read is refused") {
    const auto sent = plan_of(synthetic_job({{"replicas", 2}}));
    auto changed = plan_to_json(sent);
    changed["rows_per_replica"] = {20, 12};
    CHECK(plan_digest(plan_from_json(changed)) != plan_digest(sent));

    auto missing = plan_to_json(sent);
    missing.erase("rules");
    CHECK_THROWS_WITH_AS(plan_from_json(missing), doctest::Contains("rules"), job_error);
    auto unknown_mode = plan_to_json(sent);
    unknown_mode["mode"] = "swarm";
    CHECK_THROWS_WITH_AS(plan_from_json(unknown_mode), doctest::Contains("plan/mode: \"swarm\""),
                         job_error);
    auto bad_job = plan_to_json(sent);
    bad_job["job"]["training"]["batch_size"] = -1;
    CHECK_THROWS_AS(plan_from_json(bad_job), job_error);
    // What every process indexes by is checked: a hostile or broken plan is refused, not used.
    const auto refused = [&](const char* field, const json& value, const char* why) {
      auto broken = plan_to_json(sent);
      broken[field] = value;
      CHECK_THROWS_WITH_AS(plan_from_json(broken), doctest::Contains(why), job_error);
    };
    refused("rows_per_replica", {32}, "plan/rows_per_replica: not 2 replicas' shares");
    refused("rows_per_replica", {40, -8}, "plan/rows_per_replica");
    refused("workers", 5, "plan/workers: 5 for 2 replica(s) of 1 stage(s)");
    refused("mode", "ensemble", "plan/mode: \"ensemble\" is not the mode of the job");
    refused("rules", {0, 1, 0}, "plan/rules: a run needs at least one step");
    refused("ring", {0, 1}, "plan/ring");
    auto fewer_devices = plan_to_json(sent);
    fewer_devices["devices"]["workers"] = {"cpu"};
    CHECK_THROWS_WITH_AS(plan_from_json(fewer_devices), doctest::Contains("plan/devices: 1 for 2"),
                         job_error);
    auto bad_device = plan_to_json(sent);
    bad_device["devices"]["workers"][0] = "tpu";
    CHECK_THROWS_WITH_AS(plan_from_json(bad_device), doctest::Contains("\"tpu\" is not a device"),
                         job_error);
  }

  TEST_CASE("a node names the fact of its data, or the device, that differs from the plan's") {
    const auto plan = plan_of(synthetic_job({{"replicas", 2}}));
    device_inventory cpu_only;
    CHECK(node_misfit(plan, plan.data, cpu_only).empty());

    auto fewer_rows = plan.data;
    fewer_rows.train_rows -= 1;
    CHECK(node_misfit(plan, fewer_rows, cpu_only) ==
          "this node's data has training rows 255, the coordinator's plan 256");
    auto other_shape = plan.data;
    other_shape.row_shape = {3, 28, 28};
    CHECK(node_misfit(plan, other_shape, cpu_only).find("rows of shape [3, 28, 28]") !=
          std::string::npos);
    auto floats = plan.data;
    floats.class_labels = false;
    CHECK(node_misfit(plan, floats, cpu_only).find("targets float targets") != std::string::npos);

    auto on_gpu = plan;
    on_gpu.devices.workers = {*parse_device("cuda:1"), *parse_device("cuda:1")};
    CHECK(node_misfit(on_gpu, plan.data, cpu_only).find("built without CUDA") != std::string::npos);
    device_inventory one_gpu{true, 1, 0, 0};
    CHECK(node_misfit(on_gpu, plan.data, one_gpu) ==
          "the plan computes on cuda:1, but this node sees 1 GPU(s)");
    device_inventory two_gpus{true, 2, 0, 0};
    CHECK(node_misfit(on_gpu, plan.data, two_gpus).empty());
  }
}
