// Job validation of the parallelism and cluster keys: which keys belong to which policy, their
// ranges, schedule phases, pipelines, clusters, and how each is written back in the resolved job.
#include "core/config/parse_job.hpp"
#include "core/run/run_plan.hpp"
#include "job_problems.hpp"

#include <doctest/doctest.h>

using namespace troupe;
using nlohmann::json;
using test::check_one_problem;

TEST_SUITE("job_config") {
  TEST_CASE("local_sgd keys belong to local_sgd, momentum averaging to sgd") {
    check_one_problem({{"parallelism", {{"period", 4}}}},
                      {"/parallelism/period", "is for policy local_sgd, not sync"});
    check_one_problem({{"parallelism", {{"policy", "local_sgd"}, {"period", 0}}}},
                      {"/parallelism/period", "got 0"});
    check_one_problem({{"optimizer", {{"type", "adam"}}},
                       {"parallelism", {{"policy", "local_sgd"}, {"average_momenta", true}}}},
                      {"/parallelism/average_momenta", "sgd only"});
    auto job = parse_job({{"parallelism", {{"policy", "local_sgd"}}}});
    CHECK(job.parallelism.period == 8);
    CHECK(to_json(job)["parallelism"]["period"] == 8);
    CHECK(parse_job(json::parse(to_json(job).dump())).parallelism.policy == policy_kind::local_sgd);
  }

  TEST_CASE("fragments: local_sgd's, at most the period and the model's tensors, weights only") {
    const json base = {{"parallelism", {{"policy", "local_sgd"}, {"period", 8}, {"fragments", 4}}}};
    const auto job = parse_job(base);
    CHECK(job.parallelism.fragments == 4);
    CHECK(parse_job(json::parse(to_json(job).dump())).parallelism.fragments == 4);
    CHECK(!to_json(parse_job({{"parallelism", {{"policy", "local_sgd"}}}}))["parallelism"].contains(
        "fragments"));
    const auto plan = make_run_plan(job, describe_data(job.data));
    const auto fragments = fragments_of(plan);
    REQUIRE(fragments.size() == 4);  // the built-in MLP's 6 tensors, whole
    CHECK(fragments.back().begin + fragments.back().size == plan.model.flat_size());
    CHECK(
        render_plan(plan).find("4 streaming fragments, each averaged every 8 steps, one every 2") !=
        std::string::npos);
    // A period the fragments do not divide: the gaps between their averages are 1 and 2.
    auto uneven = base;
    uneven["parallelism"]["period"] = 3;
    uneven["parallelism"]["fragments"] = 2;
    CHECK(render_plan(make_run_plan(parse_job(uneven), describe_data(job.data)))
              .find("2 streaming fragments, each averaged every 3 steps, one every 1 or 2") !=
          std::string::npos);
    check_one_problem({{"parallelism", {{"fragments", 2}}}},
                      {"/parallelism/fragments", "is for policy local_sgd, not sync"});
    check_one_problem({{"parallelism", {{"policy", "local_sgd"}, {"fragments", 0}}}},
                      {"/parallelism/fragments", "got 0"});
    check_one_problem(
        {{"parallelism", {{"policy", "local_sgd"}, {"period", 2}, {"fragments", 3}}}},
        {"/parallelism/fragments: 3 fragments need a period of at least as many", "got period 2"});
    CHECK(parse_job({{"parallelism",
                      {{"policy", "local_sgd"}, {"fragments", 2}, {"compression", "int8"}}}})
              .parallelism.compression == compression_kind::int8);
    check_one_problem(
        {{"parallelism", {{"policy", "local_sgd"}, {"fragments", 2}, {"average_momenta", true}}}},
        {"/parallelism/fragments: fragments average the weights only for now"});
    // More fragments than the model has tensors: refused when planned, by key.
    auto many =
        parse_job({{"parallelism", {{"policy", "local_sgd"}, {"period", 100}, {"fragments", 7}}}});
    const auto problems = test::problems_of(
        [](const job_config& j) { return make_run_plan(j, describe_data(j.data)); }, many);
    CHECK(test::any_contains(problems,
                             "/parallelism/fragments: 7 fragments over a model of 6 "
                             "parameter tensors"));
  }

  TEST_CASE(
      "fragment_overlap and fragment_mix: with fragments, at most one in flight, mix in (0, 1]") {
    const json base = {
        {"parallelism",
         {{"policy", "local_sgd"}, {"period", 8}, {"fragments", 4}, {"fragment_overlap", 2}}}};
    const auto job = parse_job(base);
    CHECK(job.parallelism.fragment_overlap == 2);
    CHECK(!job.parallelism.fragment_mix);
    const auto resolved = to_json(job)["parallelism"];
    CHECK(resolved["fragment_overlap"] == 2);
    CHECK(resolved["fragment_mix"] == 0.5);  // the resolved job says what runs
    CHECK(parse_job(json::parse(to_json(job).dump())).parallelism.fragment_mix == 0.5);
    CHECK(render_plan(make_run_plan(job, describe_data(job.data)))
              .find("one every 2, merged 2 steps later while the replicas go on (the average's "
                    "share 0.5)") != std::string::npos);
    CHECK(!to_json(parse_job(
        {{"parallelism", {{"policy", "local_sgd"}, {"fragments", 2}}}}))["parallelism"]
               .contains("fragment_overlap"));
    check_one_problem({{"parallelism", {{"policy", "local_sgd"}, {"fragment_overlap", 1}}}},
                      {"/parallelism/fragment_overlap", "set parallelism.fragments"});
    check_one_problem(
        {{"parallelism", {{"policy", "local_sgd"}, {"fragments", 2}, {"fragment_mix", 0.5}}}},
        {"/parallelism/fragment_mix", "without fragment_overlap"});
    check_one_problem(
        {{"parallelism",
          {{"policy", "local_sgd"}, {"period", 8}, {"fragments", 4}, {"fragment_overlap", 3}}}},
        {"/parallelism/fragment_overlap: 3 steps overlap the next fragment's turn",
         "one every 2 steps"});
    for (const double mix : {0.0, 1.5})
      check_one_problem({{"parallelism",
                          {{"policy", "local_sgd"},
                           {"fragments", 2},
                           {"fragment_overlap", 1},
                           {"fragment_mix", mix}}}},
                        {"/parallelism/fragment_mix"});
    check_one_problem({{"parallelism", {{"policy", "async"}, {"fragment_overlap", 1}}}},
                      {"/parallelism/fragment_overlap", "is for policy local_sgd, not async"});
  }

  TEST_CASE("a slowed worker must exist") {
    check_one_problem({{"faults", {{"slow_worker", 1}, {"slow_ms", 5}}}},
                      {"/faults/slow_worker", "got 1"});
    check_one_problem({{"faults", {{"slow_ms", -5}}}}, {"/faults/slow_ms", "got -5"});
  }

  TEST_CASE("async keys belong to async; no max_staleness means unbounded") {
    check_one_problem({{"parallelism", {{"max_staleness", 2}}}},
                      {"/parallelism/max_staleness", "is for policy async, not sync"});
    check_one_problem({{"parallelism", {{"policy", "async"}, {"max_staleness", -1}}}},
                      {"/parallelism/max_staleness", "got -1"});
    check_one_problem({{"parallelism", {{"policy", "async"}, {"period", 2}}}},
                      {"/parallelism/period", "is for policy local_sgd, not async"});
    auto unbounded = parse_job({{"parallelism", {{"policy", "async"}}}});
    CHECK(!unbounded.parallelism.max_staleness);
    CHECK(!to_json(unbounded)["parallelism"].contains("max_staleness"));
    auto bounded = parse_job({{"parallelism", {{"policy", "async"}, {"max_staleness", 0}}}});
    CHECK(bounded.parallelism.max_staleness == 0);
    CHECK(parse_job(json::parse(to_json(bounded).dump())).parallelism.max_staleness == 0);
  }

  TEST_CASE("a schedule's local_sgd keys are its phases', and the others none of its") {
    const json phases = {{{"policy", "sync"}, {"steps", 5}}, {{"policy", "local_sgd"}}};
    check_one_problem({{"parallelism",
                        {{"policy", "schedule"}, {"phases", phases}, {"outer_optimizer", "none"}}}},
                      {"/parallelism/outer_optimizer", "is for policy local_sgd, not schedule",
                       "local_sgd phases take their period and average_momenta"});
    check_one_problem(
        {{"parallelism", {{"policy", "schedule"}, {"phases", phases}, {"ps_shards", 2}}}},
        {"/parallelism/ps_shards", "is for policy async, not schedule"});
    check_one_problem({{"parallelism", {{"policy", "local_sgd"}, {"phases", phases}}}},
                      {"/parallelism/phases", "is for policy schedule, not local_sgd"});
  }

  TEST_CASE("compression: async and local_sgd, one of none, bf16, int8; the default left out") {
    check_one_problem(
        {{"parallelism", {{"compression", "int8"}}}},
        {"/parallelism/compression", "is for policies local_sgd and async, not sync"});
    auto local = parse_job({{"parallelism", {{"policy", "local_sgd"}, {"compression", "bf16"}}}});
    CHECK(local.parallelism.compression == compression_kind::bf16);
    CHECK(to_json(local)["parallelism"]["compression"] == "bf16");
    check_one_problem({{"parallelism", {{"policy", "async"}, {"compression", "int4"}}}},
                      {"/parallelism/compression", "int4"});
    auto plain = parse_job({{"parallelism", {{"policy", "async"}}}});
    CHECK(plain.parallelism.compression == compression_kind::none);
    CHECK(!to_json(plain)["parallelism"].contains("compression"));
    auto packed = parse_job({{"parallelism", {{"policy", "async"}, {"compression", "int8"}}}});
    CHECK(packed.parallelism.compression == compression_kind::int8);
    CHECK(to_json(packed)["parallelism"]["compression"] == "int8");
    CHECK(parse_job(json::parse(to_json(packed).dump())).parallelism.compression ==
          compression_kind::int8);
    // The plan's bytes per step are the packed ones: a quarter and a scale per 1,024 values.
    packed.data.kind = data_kind::synthetic;
    plain.data.kind = data_kind::synthetic;
    const auto flat = make_run_plan(plain, describe_data(plain.data)).bytes_sent_per_step;
    const auto int8 = make_run_plan(packed, describe_data(packed.data)).bytes_sent_per_step;
    CHECK(int8 < flat / 3);
    CHECK(int8 > flat / 4);
  }

  TEST_CASE("schedule phases: policies, steps, per-phase keys, and adam across local_sgd -> sync") {
    const json ok = {{"parallelism",
                      {{"policy", "schedule"},
                       {"phases",
                        {{{"policy", "sync"}, {"steps", 5}},
                         {{"policy", "local_sgd"}, {"steps", 5}, {"period", 2}},
                         {{"policy", "sync"}}}}}}};
    const auto job = parse_job(ok);
    REQUIRE(job.parallelism.phases.size() == 3);
    CHECK(job.parallelism.phases[1].period == 2);
    CHECK(parse_job(json::parse(to_json(job).dump())).parallelism.phases.size() == 3);
    check_one_problem({{"parallelism", {{"policy", "schedule"}}}}, {"/parallelism/phases"});
    check_one_problem(
        {{"parallelism", {{"policy", "schedule"}, {"phases", {{{"policy", "async"}}}}}}},
        {"/parallelism/phases/0/policy", "\"sync\" or \"local_sgd\""});
    check_one_problem(
        {{"parallelism",
          {{"policy", "schedule"}, {"phases", {{{"policy", "sync"}}, {{"policy", "sync"}}}}}}},
        {"/parallelism/phases/0", "needs steps"});
    check_one_problem(
        {{"parallelism",
          {{"policy", "schedule"}, {"phases", {{{"policy", "sync"}, {"period", 3}}}}}}},
        {"/parallelism/phases/0/period", "unknown key"});
    auto adam = ok;
    adam["optimizer"] = {{"type", "adam"}};
    check_one_problem(adam, {"/parallelism/phases/2/policy", "needs optimizer sgd"});
  }
  TEST_CASE("pipeline keys: ranges, schedule names, split shape, sync only, rows per micro-batch") {
    const json ok = {
        {"parallelism",
         {{"stages", 3}, {"micro_batches", 4}, {"schedule", "gpipe"}, {"split", {"fc2", "out"}}}}};
    const auto job = parse_job(ok);
    CHECK(job.parallelism.stages == 3);
    CHECK(job.parallelism.micro_batches == 4);
    CHECK(job.parallelism.schedule == pipeline_schedule_kind::gpipe);
    CHECK(job.parallelism.split == std::vector<std::string>{"fc2", "out"});
    CHECK(job.parallelism.pipelined());
    const auto again = parse_job(json::parse(to_json(job).dump()));
    CHECK(again.parallelism.split == job.parallelism.split);
    CHECK(again.parallelism.schedule == pipeline_schedule_kind::gpipe);
    // Defaults: 1F1B, balanced, and no pipeline keys in an unpipelined resolved job.
    const auto balanced = parse_job({{"parallelism", {{"stages", 2}, {"split", "balanced"}}}});
    CHECK(balanced.parallelism.split.empty());
    CHECK(balanced.parallelism.schedule == pipeline_schedule_kind::one_f_one_b);
    CHECK(to_json(balanced)["parallelism"]["split"] == "balanced");
    CHECK(!to_json(parse_job(json::object()))["parallelism"].contains("stages"));

    check_one_problem({{"parallelism", {{"stages", 0}}}}, {"/parallelism/stages", "got 0"});
    check_one_problem({{"parallelism", {{"micro_batches", 0}}}},
                      {"/parallelism/micro_batches", "got 0"});
    check_one_problem({{"parallelism", {{"stages", 2}, {"schedule", "zigzag"}}}},
                      {"/parallelism/schedule", "\"gpipe\"", "zigzag"});
    check_one_problem({{"parallelism", {{"stages", 3}, {"split", {"out"}}}}},
                      {"/parallelism/split", "an array of 2 names"});
    check_one_problem({{"parallelism", {{"stages", 2}, {"split", {7}}}}},
                      {"/parallelism/split/0", "a layer name", "got 7"});
    check_one_problem({{"parallelism", {{"stages", 2}, {"split", "even"}}}},
                      {"/parallelism/split", "\"balanced\""});
    check_one_problem({{"parallelism", {{"split", "balanced"}}}},
                      {"/parallelism/split", "needs stages > 1"});
    check_one_problem({{"parallelism", {{"policy", "async"}, {"stages", 2}}}},
                      {"/parallelism/policy", "must be \"sync\"", "got \"async\""});
    check_one_problem({{"parallelism", {{"policy", "local_sgd"}, {"micro_batches", 2}}}},
                      {"/parallelism/policy", "must be \"sync\""});
    // 20 rows over 2 replicas leave 10 per replica: not enough for 16 micro-batches.
    check_one_problem({{"training", {{"batch_size", 20}}},
                       {"parallelism", {{"replicas", 2}, {"micro_batches", 16}}}},
                      {"/parallelism/micro_batches", "16 micro-batches", "leaves 10"});
    check_one_problem({{"parallelism", {{"stages", 2}}}, {"faults", {{"throw_worker", 2}}}},
                      {"/faults/throw_worker", "replicas x stages (2)", "got 2"});
  }

  TEST_CASE("cluster keys: ranges, replicas per node, data-parallel only, round trip") {
    const json ok = {{"parallelism", {{"replicas", 3}}},
                     {"cluster", {{"nodes", 2}, {"join_timeout_s", 5}, {"bucket_mb", 0.5}}}};
    const auto job = parse_job(ok);
    CHECK(job.cluster.enabled());
    CHECK(job.cluster.nodes == 2);
    CHECK(job.cluster.join_timeout_s == 5);
    CHECK(job.cluster.node_timeout_s == 5);
    CHECK(job.cluster.bucket_mb == 0.5);
    CHECK(job.cluster.ring_window == 1);
    CHECK(job.cluster.shared_memory);
    const auto again = parse_job(json::parse(to_json(job).dump()));
    CHECK(again.cluster.nodes == 2);
    CHECK(again.cluster.bucket_mb == 0.5);
    auto wide = ok;
    wide["cluster"]["ring_window"] = 4;
    CHECK(parse_job(json::parse(to_json(parse_job(wide)).dump())).cluster.ring_window == 4);
    check_one_problem({{"cluster", {{"nodes", 2}, {"ring_window", 0}}}},
                      {"/cluster/ring_window", "got 0"});
    check_one_problem({{"cluster", {{"nodes", 2}, {"ring_window", 1.5}}}},
                      {"/cluster/ring_window"});
    auto network_only = ok;
    network_only["cluster"]["shared_memory"] = false;
    CHECK_FALSE(
        parse_job(json::parse(to_json(parse_job(network_only)).dump())).cluster.shared_memory);
    check_one_problem({{"cluster", {{"nodes", 2}, {"shared_memory", 1}}}},
                      {"/cluster/shared_memory"});
    CHECK_FALSE(parse_job(json::object()).cluster.enabled());
    CHECK_FALSE(to_json(parse_job(json::object())).contains("cluster"));
    check_one_problem({{"cluster", {{"nodes", 0}}}}, {"/cluster/nodes", "got 0"});
    check_one_problem({{"cluster", {{"nodes", 2}}}}, {"/cluster/nodes", "2 nodes", "1 replica"});
    check_one_problem({{"cluster", {{"nodes", 1}, {"join_timeout_s", 0}}}},
                      {"/cluster/join_timeout_s", "got 0"});
    check_one_problem({{"cluster", {{"nodes", 1}, {"node_timeout_s", 0.01}}}},
                      {"/cluster/node_timeout_s"});
    check_one_problem({{"cluster", {{"nodes", 1}, {"port", 5}}}}, {"/cluster/port"});
    check_one_problem({{"cluster", {{"nodes", 1}}}, {"parallelism", {{"stages", 2}}}},
                      {"/cluster", "pipelines and ensembles"});
    check_one_problem({{"cluster", {{"nodes", 1}}}, {"ensemble", {{"members", 2}}}},
                      {"/cluster", "pipelines and ensembles"});
  }

  TEST_CASE("threads_per_replica: the job's, or the cores shared among this process's workers") {
    const auto threads = [](const json& parallelism, unsigned cores) {
      return intra_op_threads(parse_job({{"parallelism", parallelism}}), cores);
    };
    CHECK(threads({{"replicas", 1}}, 8) == 8);
    CHECK(threads({{"replicas", 3}}, 8) == 2);
    CHECK(threads({{"replicas", 4}}, 2) == 1);  // never 0, however many replicas
    CHECK(threads({{"replicas", 1}}, 0) == 1);  // the machine did not say
    CHECK(threads({{"replicas", 2}, {"stages", 2}, {"micro_batches", 2}}, 8) == 2);
    CHECK(threads({{"replicas", 1}, {"threads_per_replica", 3}}, 8) == 3);
    auto over_nodes = parse_job({{"parallelism", {{"replicas", 2}}}, {"cluster", {{"nodes", 2}}}});
    CHECK(intra_op_threads(over_nodes, 8) == 1);  // the node processes offer their own
    // Not written back: the resolved job of a run made elsewhere leaves the choice to its plan.
    CHECK(!to_json(parse_job(json::object()))["parallelism"].contains("threads_per_replica"));
  }

  // Found checking the docs: plan.txt said the ring all-reduce where local nodes then summed in
  // shared memory (decided once they join).
  TEST_CASE("the plan of nodes says when they may sum in shared memory instead of the ring") {
    const json nodes = {{"parallelism", {{"replicas", 2}}}, {"cluster", {{"nodes", 2}}}};
    const auto text = [](const json& j) {
      const auto job = parse_job(j);
      return render_plan(make_run_plan(job, describe_data(job.data)));
    };
    const std::string shared = "they sum in its shared memory instead (cluster.shared_memory)";
    CHECK(text(nodes).find(shared) != std::string::npos);
    auto ring_only = nodes;
    ring_only["cluster"]["shared_memory"] = false;
    CHECK(text(ring_only).find(shared) == std::string::npos);
  }
}
