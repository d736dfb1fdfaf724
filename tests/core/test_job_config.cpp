// Job validation: one test per kind of bad input, each asserting the JSON path (and value) in
// the message; all problems at once; defaults; the resolved job round trip; job files; --set.
#include "core/config/overrides.hpp"
#include "core/config/parse_job.hpp"
#include "core/errors.hpp"
#include "core/run/run_plan.hpp"
#include "job_problems.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace troupe;
using nlohmann::json;

namespace {

// The problems parse_job reports for `j` (empty if it is valid).
std::vector<std::string> problems_of(const json& j) {
  return test::problems_of([](const json& x) { return parse_job(x); }, j);
}

// Exactly one problem, containing every fragment.
void check_one_problem(const json& j, std::initializer_list<const char*> fragments) {
  const auto p = problems_of(j);
  REQUIRE_MESSAGE(p.size() == 1, j.dump());
  for (const char* f : fragments)
    CHECK_MESSAGE(p[0].find(f) != std::string::npos, p[0], " lacks ", std::string(f));
}

// A folder of its own under the system temp folder, removed when the test ends.
struct temp_folder {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("troupe-cfg-" + std::to_string(::getpid()));
  temp_folder() { std::filesystem::create_directories(dir); }
  ~temp_folder() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const auto path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
  }
};

// The single problem of a job_error thrown by `f`.
template <class F>
std::string only_problem(F&& f) {
  try {
    f();
  } catch (const job_error& e) {
    REQUIRE(e.problems().size() == 1);
    return e.problems()[0];
  }
  FAIL("no job_error thrown");
  return {};
}

}  // namespace

TEST_SUITE("job_config") {
  TEST_CASE("out of range: the exact message names path, limit and value") {
    const auto p = problems_of({{"optimizer", {{"lr", -0.1}}}});
    REQUIRE(p.size() == 1);
    CHECK(p[0] == "/optimizer/lr: must be > 0, got -0.1");
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
    const auto p = problems_of({{"optimizer", {{"momentum", "high"}}}});
    REQUIRE(p.size() == 1);
    CHECK(p[0] == "/optimizer/momentum: must be a number, got \"high\"");
    check_one_problem({{"optimizer", {{"nesterov", 1}}}},
                      {"/optimizer/nesterov", "true or false", "got 1"});
    check_one_problem({{"optimizer", {{"lr", true}}}}, {"/optimizer/lr", "a number", "got true"});
    check_one_problem({{"data", {{"path", 7}}}}, {"/data/path", "got 7"});
  }

  TEST_CASE("a float or a boolean is not an integer") {
    const auto p = problems_of({{"parallelism", {{"replicas", 2.5}}}});
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
    CHECK(problems_of({{"model", {{"hidden", {0, -1, 2.5}}}}}).size() == 3);
  }

  TEST_CASE("epochs and steps together") {
    const auto p = problems_of({{"training", {{"epochs", 1}, {"steps", 5}}}});
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
    CHECK(problems_of({{"optimizer", {{"nesterov", true}, {"momentum", 0.9}}}}).empty());
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

  TEST_CASE("a section that is not an object") {
    const auto p = problems_of({{"model", 3}});
    REQUIRE(p.size() == 1);
    CHECK(p[0] == "/model: must be an object, got 3");
    check_one_problem({{"training", {1, 2}}}, {"/training: must be an object", "got [1,2]"});
    check_one_problem(json(3), {"/: must be an object", "got 3"});
  }

  TEST_CASE("every problem is reported at once") {
    const auto p = problems_of(
        {{"optimizer", {{"lr", -1}}}, {"parallelism", {{"replicas", "two"}}}, {"extra", 1}});
    CHECK(p.size() == 3);
    // Checks across sections run beside problems elsewhere...
    CHECK(problems_of({{"name", "a b"},
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
    CHECK(only_problem([&] { read_json_file(tmp.dir.string()); }).find(": cannot open: ") !=
          std::string::npos);

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

  TEST_CASE("--set: JSON values, strings, nesting and arrays") {
    json j = {{"model", {{"hidden", {1, 2}}}}, {"seed", 3}};
    apply_override(j, "optimizer.lr=0.5");  // creates the missing "optimizer" object
    CHECK(j["optimizer"]["lr"] == 0.5);
    apply_override(j, "seed=7");
    CHECK(j["seed"] == 7);
    apply_override(j, "name=trial-3");  // not JSON: taken as a string
    CHECK(j["name"] == "trial-3");
    apply_override(j, "data.path=\"3\"");  // quoted: the string "3", not the number
    CHECK(j["data"]["path"] == "3");
    apply_override(j, "model.hidden.1=64");
    CHECK(j["model"]["hidden"] == json({1, 64}));
    apply_override(j, "model.hidden=[8,8,8]");
    CHECK(j["model"]["hidden"] == json({8, 8, 8}));
    apply_override(j, "training={\"steps\": 4}");
    CHECK(j["training"]["steps"] == 4);
    apply_override(j, "a.b.c=true");
    CHECK(j["a"]["b"]["c"] == true);
  }

  TEST_CASE("--set follows the suite's merge-patch rules: objects merge, null removes") {
    json j = {{"training", {{"epochs", 8}, {"batch_size", 128}, {"eval_interval", 0}}}};
    apply_override(j, "training={\"steps\": 20}");  // merges: batch_size stays
    CHECK(j["training"] == json({{"steps", 20}, {"batch_size", 128}, {"eval_interval", 0}}));
    apply_override(j, "training.eval_interval=null");
    CHECK(!j["training"].contains("eval_interval"));
    apply_override(j, "training={\"batch_size\": null}");
    CHECK(j["training"] == json({{"steps", 20}}));
    apply_override(j, "optimizer.momentum=null");  // removing what is not there: nothing
    CHECK(j["optimizer"] == json::object());
    // The same patch the suite applies to a base gives the same job.
    json base = {{"training", {{"epochs", 8}, {"batch_size", 128}}}};
    json merged = base;
    merged.merge_patch(json::parse(R"({"training": {"batch_size": 64, "epochs": null}})"));
    apply_override(base, "training={\"batch_size\": 64, \"epochs\": null}");
    CHECK(base == merged);
  }

  TEST_CASE("--set: a training length replaces the other length from the file") {
    json j = {{"training", {{"epochs", 8}, {"batch_size", 128}}}};
    apply_override(j, "training.steps=50");
    CHECK(j["training"] == json({{"steps", 50}, {"batch_size", 128}}));
    CHECK(parse_job(j).training.steps == 50);
    apply_override(j, "training={\"epochs\": 2}");
    CHECK(j["training"] == json({{"epochs", 2}, {"batch_size", 128}}));
    // Both given in one --set: validation still says to choose.
    apply_override(j, "training={\"epochs\": 1, \"steps\": 5}");
    CHECK(problems_of(j).size() == 1);
  }

  TEST_CASE("--set: bad assignments name themselves and leave the job untouched") {
    json j = {{"model", {{"hidden", {1, 2}}}}, {"seed", 3}};
    const json before = j;
    CHECK(only_problem([&] { apply_override(j, "model.hidden.5=1"); }) ==
          "--set model.hidden.5=1: /model/hidden has 2 elements, no index 5");
    CHECK(only_problem([&] {
            apply_override(j, "model.hidden.x=1");
          }).find("/model/hidden is an array") != std::string::npos);
    CHECK(only_problem([&] { apply_override(j, "seed.x=1"); }) ==
          "--set seed.x=1: /seed is not an object");
    CHECK(only_problem([&] { apply_override(j, "model.hidden.0.x=1"); }) ==
          "--set model.hidden.0.x=1: /model/hidden/0 is not an object");
    CHECK(only_problem([&] { apply_override(j, "foo"); }) == "--set foo: expected PATH=VALUE");
    CHECK(only_problem([&] { apply_override(j, "=3"); }) == "--set =3: empty path");
    CHECK(only_problem([&] { apply_override(j, "a..b=1"); }) == "--set a..b=1: empty key in path");
    CHECK(j == before);
  }

  TEST_CASE("--set of an unknown key is left for parse_job to report") {
    json j = json::object();
    apply_override(j, "optimizer.lrr=1");
    const auto p = problems_of(j);
    REQUIRE_MESSAGE(p.size() == 1, j.dump());
    CHECK(p[0].find("/optimizer/lrr: unknown key") == 0);
  }

  TEST_CASE("local_sgd keys belong to local_sgd, momentum averaging to sgd") {
    check_one_problem({{"parallelism", {{"period", 4}}}}, {"/parallelism/period", "unknown key"});
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

  TEST_CASE("a slowed worker must exist") {
    check_one_problem({{"faults", {{"slow_worker", 1}, {"slow_ms", 5}}}},
                      {"/faults/slow_worker", "got 1"});
    check_one_problem({{"faults", {{"slow_ms", -5}}}}, {"/faults/slow_ms", "got -5"});
  }

  TEST_CASE("async keys belong to async; no max_staleness means unbounded") {
    check_one_problem({{"parallelism", {{"max_staleness", 2}}}},
                      {"/parallelism/max_staleness", "unknown key"});
    check_one_problem({{"parallelism", {{"policy", "async"}, {"max_staleness", -1}}}},
                      {"/parallelism/max_staleness", "got -1"});
    check_one_problem({{"parallelism", {{"policy", "async"}, {"period", 2}}}},
                      {"/parallelism/period", "unknown key"});
    auto unbounded = parse_job({{"parallelism", {{"policy", "async"}}}});
    CHECK(!unbounded.parallelism.max_staleness);
    CHECK(!to_json(unbounded)["parallelism"].contains("max_staleness"));
    auto bounded = parse_job({{"parallelism", {{"policy", "async"}, {"max_staleness", 0}}}});
    CHECK(bounded.parallelism.max_staleness == 0);
    CHECK(parse_job(json::parse(to_json(bounded).dump())).parallelism.max_staleness == 0);
  }

  TEST_CASE("compression: async and local_sgd, one of none, bf16, int8; the default left out") {
    check_one_problem({{"parallelism", {{"compression", "int8"}}}},
                      {"/parallelism/compression", "unknown key"});
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
    CHECK(job.cluster.shared_memory);
    const auto again = parse_job(json::parse(to_json(job).dump()));
    CHECK(again.cluster.nodes == 2);
    CHECK(again.cluster.bucket_mb == 0.5);
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
}
