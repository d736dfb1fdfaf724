// Job validation: one test per kind of bad input, each asserting the JSON path (and value) in
// the message; all problems at once; defaults; the resolved job round trip; job files. --set's
// own rules: test_set_override.cpp.
// The keys of the update policies, pipelines and clusters: test_parallelism_keys.cpp.
#include "core/config/overrides.hpp"
#include "core/config/parse_job.hpp"
#include "core/errors.hpp"
#include "core/run/run_plan.hpp"
#include "job_problems.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace troupe;
using nlohmann::json;

namespace {

using test::check_one_problem;
using test::job_problems;
using test::only_problem;

}  // namespace

TEST_SUITE("job_config") {
  TEST_CASE("out of range: the exact message names path, limit and value") {
    const auto p = job_problems({{"optimizer", {{"lr", -0.1}}}});
    REQUIRE(p.size() == 1);
    CHECK(p[0] == "/optimizer/lr: must be > 0, got -0.1");
  }

  TEST_CASE("cluster.collective: ring by default, gloo by name, nothing else, only with nodes") {
    const auto nodes = [](nlohmann::json cluster) {
      cluster["nodes"] = 2;
      return nlohmann::json{{"parallelism", {{"replicas", 2}}}, {"cluster", cluster}};
    };
    CHECK(parse_job(nodes(nlohmann::json::object())).cluster.collective == node_collective::ring);
    const auto gloo = parse_job(nodes({{"collective", "gloo"}}));
    CHECK(gloo.cluster.collective == node_collective::gloo);
    CHECK(parse_job(to_json(gloo)).cluster.collective == node_collective::gloo);  // round trip
    check_one_problem(nodes({{"collective", "nccl"}}),
                      {"/cluster/collective", "\"ring\"", "\"gloo\"", "got \"nccl\""});
    check_one_problem({{"cluster", {{"collective", "gloo"}}}},
                      {"/cluster/collective: needs cluster.nodes"});
  }

  TEST_CASE("unknown top-level key") {
    check_one_problem({{"nmae", "x"}},
                      {"/nmae: unknown key (did you mean \"name\"?", "known: name, seed, model"});
  }

  TEST_CASE("unknown nested key lists the known ones") {
    check_one_problem({{"optimizer", {{"lrr", 0.1}}}},
                      {"/optimizer/lrr: unknown key (did you mean \"lr\"? known: type, lr, "
                       "weight_decay, momentum"});
    check_one_problem({{"training", {{"epoch", 3}}}}, {"/training/epoch", "unknown key", "epochs"});
  }

  TEST_CASE("wrong type") {
    const auto p = job_problems({{"optimizer", {{"momentum", "high"}}}});
    REQUIRE(p.size() == 1);
    CHECK(p[0] == "/optimizer/momentum: must be a number, got \"high\"");
    check_one_problem({{"optimizer", {{"nesterov", 1}}}},
                      {"/optimizer/nesterov", "true or false", "got 1"});
    check_one_problem({{"optimizer", {{"lr", true}}}}, {"/optimizer/lr", "a number", "got true"});
    check_one_problem({{"data", {{"path", 7}}}}, {"/data/path", "got 7"});
  }

  TEST_CASE("a float or a boolean is not an integer") {
    const auto p = job_problems({{"parallelism", {{"replicas", 2.5}}}});
    REQUIRE(p.size() == 1);
    CHECK(p[0] == "/parallelism/replicas: must be an integer in [1, 256], got 2.5");
    check_one_problem({{"parallelism", {{"replicas", 2.0}}}},
                      {"/parallelism/replicas", "integer", "got 2.0"});
    check_one_problem({{"seed", true}}, {"/seed", "an integer >= 0", "got true"});
  }

  TEST_CASE("integer out of range") {
    check_one_problem({{"parallelism", {{"replicas", 0}}}},
                      {"/parallelism/replicas", "in [1, 256]", "got 0"});
    check_one_problem({{"seed", -1}}, {"/seed", ">= 0", "got -1"});
    // Beyond int64_t the message shows the bound that was broken.
    check_one_problem({{"seed", UINT64_MAX}},
                      {"/seed", "9223372036854775807]", "got 18446744073709551615"});
    check_one_problem({{"seed", 1e19}}, {"/seed", "9223372036854775807]", "got 1e+19"});
  }

  TEST_CASE("bad enum value") {
    check_one_problem({{"model", {{"type", "rnn"}}}},
                      {"/model/type", "one of \"mlp\", \"cnn\"", "got \"rnn\""});
    check_one_problem({{"parallelism", {{"policy", "gossip"}}}},
                      {"/parallelism/policy", "\"sync\"", "got \"gossip\""});
    check_one_problem({{"model", {{"activation", 1}}}}, {"/model/activation", "got 1"});
  }

  TEST_CASE("a bad type is one problem, not one per type-specific key") {
    check_one_problem({{"model", {{"type", "rnn"}, {"channels", {8}}, {"kernel_size", 3}}}},
                      {"/model/type", "\"rnn\""});
    check_one_problem({{"optimizer", {{"type", "lion"}, {"betas", {0.9, 0.99}}}}},
                      {"/optimizer/type", "\"lion\""});
  }

  TEST_CASE("model.init: saved or seed, for a torchscript model only, shown only when seed") {
    const json script = {{"type", "torchscript"}, {"path", "net.pt"}};
    CHECK(!parse_job({{"model", script}}).model.init_from_seed);
    auto seeded = script;
    seeded["init"] = "seed";
    const auto job = parse_job({{"model", seeded}});
    CHECK(job.model.init_from_seed);
    CHECK(to_json(job)["model"]["init"] == "seed");
    CHECK(!to_json(parse_job({{"model", script}}))["model"].contains("init"));
    CHECK(parse_job(json::parse(to_json(job).dump())).model.init_from_seed);
    auto bad = script;
    bad["init"] = "fresh";
    check_one_problem({{"model", bad}}, {"/model/init", "\"saved\"", "\"fresh\""});
    check_one_problem({{"model", {{"init", "seed"}}}}, {"/model/init", "unknown key"});
  }

  TEST_CASE("a key of another type is unknown under this one") {
    check_one_problem({{"optimizer", {{"type", "adam"}, {"momentum", 0.9}}}},
                      {"/optimizer/momentum", "unknown key", "betas"});
    check_one_problem({{"model", {{"channels", {8}}}}}, {"/model/channels", "unknown key"});
    check_one_problem({{"data", {{"type", "synthetic"}, {"path", "/x"}}}},
                      {"/data/path", "unknown key"});
    check_one_problem({{"data", {{"noise", 0.5}}}}, {"/data/noise", "unknown key"});
  }

  TEST_CASE("array elements are checked one by one") {
    check_one_problem({{"model", {{"hidden", {64, 0}}}}},
                      {"/model/hidden/1", "in [1, 65536]", "got 0"});
    check_one_problem({{"model", {{"hidden", "64"}}}},
                      {"/model/hidden", "an array of integers", "got \"64\""});
    check_one_problem({{"model", {{"type", "cnn"}, {"channels", json::array()}}}},
                      {"/model/channels", "1 to 3 integers", "got []"});
    check_one_problem({{"model", {{"type", "cnn"}, {"channels", {8, 8, 8, 8}}}}},
                      {"/model/channels", "1 to 3", "got [8,8,8,8]"});
    check_one_problem({{"optimizer", {{"type", "adam"}, {"betas", {0.9, 1.5}}}}},
                      {"/optimizer/betas/1", "in [0, 1)", "got 1.5"});
    check_one_problem({{"optimizer", {{"type", "adam"}, {"betas", {0.9}}}}},
                      {"/optimizer/betas", "exactly 2 numbers", "got [0.9]"});
    CHECK(job_problems({{"model", {{"hidden", {0, -1, 2.5}}}}}).size() == 3);
  }

  TEST_CASE("epochs and steps together") {
    const auto p = job_problems({{"training", {{"epochs", 1}, {"steps", 5}}}});
    REQUIRE(p.size() == 1);
    CHECK(p[0].find("/training: give either epochs or steps, not both (") == 0);
    CHECK(p[0].find("--set training.steps=N") != std::string::npos);
  }

  TEST_CASE("batch smaller than the replicas") {
    check_one_problem({{"training", {{"batch_size", 2}}}, {"parallelism", {{"replicas", 4}}}},
                      {"/training/batch_size", "every replica", "got 2"});
  }

  TEST_CASE("cnn kernel size must be odd") {
    check_one_problem({{"model", {{"type", "cnn"}, {"kernel_size", 4}}}},
                      {"/model/kernel_size", "must be odd", "got 4"});
    check_one_problem({{"model", {{"type", "cnn"}, {"kernel_size", 11}}}},
                      {"/model/kernel_size", "in [1, 9]", "got 11"});
  }

  TEST_CASE("nesterov needs momentum") {
    check_one_problem({{"optimizer", {{"nesterov", true}}}},
                      {"/optimizer/nesterov", "momentum > 0", "got true"});
    CHECK(job_problems({{"optimizer", {{"nesterov", true}, {"momentum", 0.9}}}}).empty());
    // A bad momentum is its own problem, not a second one about nesterov.
    check_one_problem({{"optimizer", {{"nesterov", true}, {"momentum", 1}}}},
                      {"/optimizer/momentum", "in [0, 1)", "got 1"});
  }

  TEST_CASE("names become folder names, so they are restricted") {
    check_one_problem({{"name", "../x"}}, {"/name", "A-Z a-z 0-9 _ . -", "got \"../x\""});
    check_one_problem({{"name", ""}}, {"/name", "got \"\""});
    check_one_problem({{"name", std::string(65, 'a')}}, {"/name", "1 to 64"});
    CHECK(parse_job({{"name", "run_1.b-2"}}).name == "run_1.b-2");
  }

  TEST_CASE("fault injection must name an existing worker") {
    check_one_problem({{"faults", {{"throw_worker", 2}}}, {"parallelism", {{"replicas", 2}}}},
                      {"/faults/throw_worker", "below", "got 2"});
    check_one_problem({{"faults", {{"throw_worker", -1}}}}, {"/faults/throw_worker", "got -1"});
    check_one_problem({{"faults", {{"throw_step", 1.5}}}}, {"/faults/throw_step", "got 1.5"});
  }

  TEST_CASE("the socket ring's faults are booleans, written back only when set") {
    const json both = {{"faults", {{"refuse_socket_ring", true}, {"refuse_ring_reform", true}}}};
    const auto job = parse_job(both);
    CHECK(job.faults.refuse_socket_ring);
    CHECK(job.faults.refuse_ring_reform);
    CHECK(json::parse(to_json(job)["faults"].dump()) == both["faults"]);
    CHECK_FALSE(to_json(parse_job(json::object())).contains("faults"));
    check_one_problem({{"faults", {{"refuse_ring_reform", 1}}}},
                      {"/faults/refuse_ring_reform", "true or false"});
  }

  TEST_CASE("a section that is not an object") {
    const auto p = job_problems({{"model", 3}});
    REQUIRE(p.size() == 1);
    CHECK(p[0] == "/model: must be an object, got 3");
    check_one_problem({{"training", {1, 2}}}, {"/training: must be an object", "got [1,2]"});
    check_one_problem(json(3), {"/: must be an object", "got 3"});
  }

  TEST_CASE("every problem is reported at once") {
    const auto p = job_problems(
        {{"optimizer", {{"lr", -1}}}, {"parallelism", {{"replicas", "two"}}}, {"extra", 1}});
    CHECK(p.size() == 3);
    // Checks across sections run beside problems elsewhere...
    CHECK(job_problems({{"name", "a b"},
                        {"training", {{"batch_size", 2}}},
                        {"parallelism", {{"replicas", 4}}}})
              .size() == 2);
    // ...but not against a default standing in for a bad value (batch_size stays 128 here).
    check_one_problem({{"training", {{"batch_size", "x"}}}, {"parallelism", {{"replicas", 200}}}},
                      {"/training/batch_size", "got \"x\""});
  }

  TEST_CASE("an empty job takes the documented defaults") {
    const auto job = parse_job(json::object());
    CHECK(job.name == "job");
    CHECK(job.seed == 0);
    CHECK(job.model.kind == model_kind::mlp);
    CHECK(job.model.hidden == std::vector<int64_t>{256, 128});
    CHECK(job.model.activation == activation_kind::relu);
    CHECK(job.data.kind == data_kind::fashion_mnist);
    CHECK(job.data.path == "/usr/share/datasets/fashion-mnist");
    CHECK(job.optimizer.kind == optimizer_kind::sgd);
    CHECK(job.optimizer.lr == 0.01);
    CHECK(job.optimizer.momentum == 0.0);
    CHECK(!job.optimizer.nesterov);
    CHECK(job.training.epochs == 1);
    CHECK(job.training.steps == 0);
    CHECK(job.training.batch_size == 128);
    CHECK(job.training.eval_interval == 0);
    CHECK(job.parallelism.policy == policy_kind::sync);
    CHECK(job.parallelism.replicas == 1);
    CHECK(job.parallelism.threads_per_replica == 0);  // the plan's choice
    CHECK(!job.faults.throw_worker);
    const auto adam = parse_job({{"optimizer", {{"type", "adam"}}}}).optimizer;
    CHECK(adam.lr == 0.001);
    CHECK(adam.beta1 == 0.9);
    CHECK(adam.beta2 == 0.999);
    CHECK(adam.eps == 1e-8);
    CHECK(adam.weight_decay == 0);
    const auto adamw = parse_job({{"optimizer", {{"type", "adamw"}}}}).optimizer;
    CHECK(adamw.lr == 0.001);
    CHECK(adamw.weight_decay == 0.01);  // torch.optim.AdamW's default
    CHECK(parse_job({{"optimizer", {{"type", "adamw"}, {"weight_decay", 0}}}})
              .optimizer.weight_decay == 0);
    // rmsprop: torch.optim.RMSprop's defaults; its keys only; the resolved job round-trips.
    const auto rmsprop = parse_job({{"optimizer", {{"type", "rmsprop"}}}}).optimizer;
    CHECK(rmsprop.lr == 0.01);
    CHECK(rmsprop.alpha == 0.99);
    CHECK(rmsprop.eps == 1e-8);
    CHECK(rmsprop.momentum == 0);
    CHECK(!rmsprop.centered);
    CHECK(rmsprop.state_buffers() == 1);
    const json tuned = {
        {"optimizer",
         {{"type", "rmsprop"}, {"alpha", 0.9}, {"momentum", 0.5}, {"centered", true}}}};
    const auto round = parse_job(json::parse(to_json(parse_job(tuned)).dump())).optimizer;
    CHECK(round.alpha == 0.9);
    CHECK(round.momentum == 0.5);
    CHECK(round.centered);
    CHECK(round.state_buffers() == 3);
    CHECK_THROWS_WITH_AS(parse_job({{"optimizer", {{"type", "rmsprop"}, {"alpha", 1}}}}),
                         doctest::Contains("/optimizer/alpha"), job_error);
    CHECK_THROWS_WITH_AS(parse_job({{"optimizer", {{"type", "rmsprop"}, {"nesterov", true}}}}),
                         doctest::Contains("/optimizer/nesterov: unknown key"), job_error);
    const auto cnn = parse_job({{"model", {{"type", "cnn"}}}}).model;
    CHECK(cnn.hidden == std::vector<int64_t>{128});
    CHECK(cnn.channels == std::vector<int64_t>{16, 32});
    CHECK(cnn.kernel_size == 5);
    CHECK(parse_job({{"model", {{"hidden", json::array()}}}}).model.hidden.empty());
    const auto steps = parse_job({{"training", {{"steps", 7}}}}).training;
    CHECK(steps.steps == 7);
    CHECK(steps.epochs == 0);
  }

  TEST_CASE("the resolved job round-trips, with only the keys of the chosen types") {
    const json a = {{"name", "a"},
                    {"seed", 42},
                    {"model", {{"type", "mlp"}, {"hidden", {32}}, {"activation", "gelu"}}},
                    {"optimizer", {{"type", "sgd"}, {"lr", 0.2}, {"momentum", 0.5}}},
                    {"training", {{"steps", 9}, {"batch_size", 6}}},
                    {"parallelism", {{"replicas", 2}}},
                    {"faults", {{"throw_worker", 1}, {"throw_step", 2}}},
                    {"cluster", {{"step_timeout_s", 4.5}}}};
    const json b = {{"model", {{"type", "cnn"}, {"channels", {4, 8, 8}}, {"kernel_size", 3}}},
                    {"data", {{"type", "synthetic"}, {"noise", 0.5}, {"train_samples", 99}}},
                    {"optimizer", {{"type", "adam"}, {"betas", {0.8, 0.9}}, {"eps", 1e-6}}},
                    {"training", {{"epochs", 3}, {"eval_interval", 5}}},
                    {"parallelism", {{"replicas", 3}, {"threads_per_replica", 2}}}};
    for (const auto& j : {a, b}) {
      const auto first = to_json(parse_job(j));
      const auto again = to_json(parse_job(json::parse(first.dump())));
      CHECK(first == again);
    }
    const auto ra = to_json(parse_job(a));
    CHECK(ra["seed"] == 42);
    CHECK(ra["cluster"] == json({{"step_timeout_s", 4.5}}));  // in one process, only the limit
    CHECK(ra["model"]["hidden"] == json({32}));
    CHECK(!ra["model"].contains("channels"));
    CHECK(!ra["model"].contains("kernel_size"));
    CHECK(ra["data"]["path"] == "/usr/share/datasets/fashion-mnist");
    CHECK(!ra["data"].contains("noise"));
    CHECK(ra["optimizer"]["momentum"] == 0.5);
    CHECK(!ra["optimizer"].contains("betas"));
    CHECK(ra["training"]["steps"] == 9);
    CHECK(!ra["training"].contains("epochs"));
    CHECK(ra["faults"]["throw_worker"] == 1);
    CHECK(ra["faults"]["throw_step"] == 2);

    const auto rb = to_json(parse_job(b));
    CHECK(rb["model"]["hidden"] == json({128}));
    CHECK(rb["model"]["kernel_size"] == 3);
    CHECK(rb["data"]["train_samples"] == 99);
    CHECK(rb["data"]["test_samples"] == 1024);
    CHECK(!rb["data"].contains("path"));
    CHECK(rb["optimizer"]["lr"] == 0.001);
    CHECK(rb["optimizer"]["betas"] == json({0.8, 0.9}));
    CHECK(!rb["optimizer"].contains("momentum"));
    CHECK(!rb["optimizer"].contains("nesterov"));
    CHECK(!rb["training"].contains("steps"));
    CHECK(!rb.contains("faults"));

    // The defaults themselves form a valid job.
    CHECK(to_json(parse_job(to_json(job_config{}))) == to_json(job_config{}));
  }

  TEST_CASE("reading job files: missing, invalid JSON with line and column, not an object") {
    const temp_folder tmp;
    CHECK(only_problem([] { read_json_file("/no/such/job.json"); }) ==
          "/no/such/job.json: cannot open: No such file or directory");
    CHECK(only_problem([&] { read_json_file(tmp.path.string()); }).find(": cannot open: ") !=
          std::string::npos);
    // A file that never ends, or is far longer than any job, is refused at a limit, not read
    // until memory runs out.
    CHECK(only_problem([] { read_json_file("/dev/zero"); }) ==
          "/dev/zero: longer than 64 MiB, more than a job file holds (is it the job?)");

    // The second comma on line 2 is the 13th character: "  \"seed\": 1,,".
    const auto bad = tmp.write("bad.json", "{\n  \"seed\": 1,,\n}");
    const auto p = only_problem([&] { read_json_file(bad); });
    CHECK_MESSAGE(p.find(bad + ":2:13: invalid JSON: ") == 0, p);
    const auto truncated = tmp.write("truncated.json", "{\"seed\": 1");
    CHECK(only_problem([&] { read_json_file(truncated); }).find(truncated + ":1:") == 0);

    const auto list = tmp.write("list.json", "[1, 2]");
    const auto q = only_problem([&] { read_json_file(list); });
    CHECK_MESSAGE(q.find(list + ": ") == 0, q);
    CHECK(q.find("must be a JSON object") != std::string::npos);

    const auto good = tmp.write("good.json", "{\"seed\": 5}");
    CHECK(parse_job(read_json_file(good)).seed == 5);
  }

  // Found probing as a hostile user: a suite whose sweep held 200,000 nested arrays overflowed
  // the stack of the code that expands it (a segmentation fault).
  TEST_CASE("job files and --set values nested deeper than 64 levels are refused by path") {
    const auto nested = [](int depth) {
      return std::string(static_cast<std::size_t>(depth), '[') +
             std::string(static_cast<std::size_t>(depth), ']');
    };
    CHECK(parse_json_text("{\"sweep\": {\"seed\": " + nested(62) + "}}", "s.json")["sweep"]
              .is_object());
    CHECK(only_problem([&] {
            parse_json_text("{\"sweep\": {\"seed\": " + nested(200000) + "}}", "s.json");
          }) == "s.json: /sweep/seed" + [] {
      std::string zeros;
      for (int i = 0; i < 62; ++i)
        zeros += "/0";
      return zeros;
    }() + ": nested deeper than 64 levels (a job is a few levels deep)");
    json j = json::object();
    apply_override(j, "model=" + nested(64));
    CHECK_THROWS_WITH_AS(apply_override(j, "model=" + nested(65)),
                         doctest::Contains(": the value is nested deeper than 64 levels"),
                         job_error);
    std::string path = "model";
    for (int i = 0; i < 64; ++i)
      path += ".a";
    CHECK_THROWS_WITH_AS(apply_override(j, path + "=1"),
                         doctest::Contains(": a path of more than 64 keys"), job_error);
    // A long value is cut in the message.
    const auto message = only_problem([&] { apply_override(j, "model=" + nested(1000)); });
    CHECK(message.size() < 300);
  }
}
