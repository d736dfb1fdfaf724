// Job validation: one test per kind of bad input, each asserting the JSON path (and value) in
// the message; all problems at once; defaults; the resolved job round trip; --set overrides.
#include "core/config/overrides.hpp"
#include "core/config/parse_job.hpp"
#include "core/errors.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace troupe;
using nlohmann::json;

namespace {

// The problems parse_job reports for `j` (empty if it is valid).
std::vector<std::string> problems_of(const json& j) {
  try {
    parse_job(j);
  } catch (const job_error& e) {
    return e.problems();
  }
  return {};
}

// Exactly one problem, containing every fragment.
void check_one_problem(const json& j, std::initializer_list<const char*> fragments) {
  const auto p = problems_of(j);
  REQUIRE(p.size() == 1);
  for (const char* f : fragments)
    CHECK_MESSAGE(p[0].find(f) != std::string::npos, p[0]);
}

std::string write_temp(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / ("troupe-cfg-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_SUITE("job_config") {
  TEST_CASE("out of range: the exact message names path, limit and value") {
    const auto p = problems_of({{"optimizer", {{"lr", -0.1}}}});
    REQUIRE(p.size() == 1);
    CHECK(p[0] == "/optimizer/lr: must be > 0, got -0.1");
  }

  TEST_CASE("unknown top-level key") {
    check_one_problem({{"nmae", "x"}}, {"/nmae", "unknown key"});
  }

  TEST_CASE("unknown nested key lists the known ones") {
    check_one_problem({{"training", {{"epoch", 3}}}}, {"/training/epoch", "unknown key", "epochs"});
  }

  TEST_CASE("wrong type") {
    check_one_problem({{"optimizer", {{"momentum", "high"}}}},
                      {"/optimizer/momentum", "a number", "\"high\""});
    check_one_problem({{"optimizer", {{"nesterov", 1}}}}, {"/optimizer/nesterov", "true or false"});
  }

  TEST_CASE("a float or a boolean is not an integer") {
    check_one_problem({{"parallelism", {{"replicas", 2.5}}}}, {"/parallelism/replicas", "2.5"});
    check_one_problem({{"parallelism", {{"replicas", 2.0}}}}, {"/parallelism/replicas", "integer"});
    check_one_problem({{"seed", true}}, {"/seed", "true"});
  }

  TEST_CASE("integer out of range") {
    check_one_problem({{"parallelism", {{"replicas", 0}}}},
                      {"/parallelism/replicas", "in [1, 256]", "got 0"});
    check_one_problem({{"seed", -1}}, {"/seed", ">= 0", "got -1"});
  }

  TEST_CASE("bad enum value") {
    check_one_problem({{"model", {{"type", "rnn"}}}},
                      {"/model/type", "\"mlp\", \"cnn\"", "\"rnn\""});
    check_one_problem({{"parallelism", {{"policy", "gossip"}}}}, {"/parallelism/policy", "gossip"});
  }

  TEST_CASE("a key of another type is unknown under this one") {
    check_one_problem({{"optimizer", {{"type", "adam"}, {"momentum", 0.9}}}},
                      {"/optimizer/momentum", "unknown key"});
    check_one_problem({{"model", {{"channels", {8}}}}}, {"/model/channels", "unknown key"});
    check_one_problem({{"data", {{"type", "synthetic"}, {"path", "/x"}}}},
                      {"/data/path", "unknown key"});
  }

  TEST_CASE("array elements are checked one by one") {
    check_one_problem({{"model", {{"hidden", {64, 0}}}}}, {"/model/hidden/1", "got 0"});
    check_one_problem({{"model", {{"hidden", "64"}}}}, {"/model/hidden", "an array"});
    check_one_problem({{"optimizer", {{"type", "adam"}, {"betas", {0.9, 1.5}}}}},
                      {"/optimizer/betas/1", "1.5"});
  }

  TEST_CASE("epochs and steps together") {
    check_one_problem({{"training", {{"epochs", 1}, {"steps", 5}}}}, {"/training", "not both"});
  }

  TEST_CASE("batch smaller than the replicas") {
    check_one_problem({{"training", {{"batch_size", 2}}}, {"parallelism", {{"replicas", 4}}}},
                      {"/training/batch_size", "got 2"});
  }

  TEST_CASE("cnn kernel size must be odd") {
    check_one_problem({{"model", {{"type", "cnn"}, {"kernel_size", 4}}}},
                      {"/model/kernel_size", "odd", "got 4"});
  }

  TEST_CASE("nesterov needs momentum") {
    check_one_problem({{"optimizer", {{"nesterov", true}}}}, {"/optimizer/nesterov", "momentum"});
  }

  TEST_CASE("names become folder names, so they are restricted") {
    check_one_problem({{"name", "../x"}}, {"/name", "\"../x\""});
    check_one_problem({{"name", ""}}, {"/name"});
  }

  TEST_CASE("fault injection must name an existing worker") {
    check_one_problem({{"faults", {{"throw_worker", 2}}}, {"parallelism", {{"replicas", 2}}}},
                      {"/faults/throw_worker", "got 2"});
  }

  TEST_CASE("a section that is not an object") {
    check_one_problem({{"model", 3}}, {"/model", "must be an object", "got 3"});
  }

  TEST_CASE("every problem is reported at once") {
    const auto p = problems_of({{"optimizer", {{"lr", -1}, {"momentun", 0.9}}},
                                {"parallelism", {{"replicas", "two"}}},
                                {"extra", 1}});
    CHECK(p.size() == 4);
  }

  TEST_CASE("an empty job takes the documented defaults") {
    const auto job = parse_job(json::object());
    CHECK(job.name == "job");
    CHECK(job.model.kind == model_kind::mlp);
    CHECK(job.model.hidden == std::vector<int64_t>{256, 128});
    CHECK(job.data.path == "/usr/share/datasets/fashion-mnist");
    CHECK(job.optimizer.lr == 0.01);
    CHECK(job.training.epochs == 1);
    CHECK(job.training.steps == 0);
    CHECK(job.training.batch_size == 128);
    CHECK(job.parallelism.replicas == 1);
    CHECK(parse_job({{"optimizer", {{"type", "adam"}}}}).optimizer.lr == 0.001);
    CHECK(parse_job({{"model", {{"type", "cnn"}}}}).model.hidden == std::vector<int64_t>{128});
    CHECK(parse_job({{"training", {{"steps", 7}}}}).training.epochs == 0);
  }

  TEST_CASE("the resolved job round-trips") {
    const json a = {{"name", "a"},
                    {"model", {{"type", "mlp"}, {"hidden", {32}}, {"activation", "gelu"}}},
                    {"optimizer", {{"type", "sgd"}, {"lr", 0.2}, {"momentum", 0.5}}},
                    {"training", {{"steps", 9}}},
                    {"faults", {{"throw_worker", 0}, {"throw_step", 2}}}};
    const json b = {{"model", {{"type", "cnn"}, {"channels", {4, 8, 8}}, {"kernel_size", 3}}},
                    {"data", {{"type", "synthetic"}, {"noise", 0.5}}},
                    {"optimizer", {{"type", "adam"}, {"betas", {0.8, 0.9}}}},
                    {"parallelism", {{"replicas", 3}}}};
    for (const auto& j : {a, b}) {
      const auto first = to_json(parse_job(j));
      const auto again = to_json(parse_job(json::parse(first.dump())));
      CHECK(first == again);
    }
    CHECK(to_json(parse_job(a))["faults"]["throw_step"] == 2);
    CHECK(!to_json(parse_job(b)).contains("faults"));
  }

  TEST_CASE("reading job files: missing, invalid JSON with line and column, not an object") {
    CHECK_THROWS_WITH_AS(read_json_file("/no/such/job.json"),
                         doctest::Contains("/no/such/job.json: cannot open"), job_error);
    const auto bad = write_temp("bad.json", "{\n  \"seed\": 1,,\n}");
    CHECK_THROWS_WITH_AS(read_json_file(bad), doctest::Contains("bad.json:2:"), job_error);
    const auto list = write_temp("list.json", "[1, 2]");
    CHECK_THROWS_WITH_AS(read_json_file(list), doctest::Contains("must be a JSON object"),
                         job_error);
    std::filesystem::remove_all(std::filesystem::path(bad).parent_path());
  }

  TEST_CASE("--set: JSON values, strings, nesting, arrays, and bad paths") {
    json j = {{"model", {{"hidden", {1, 2}}}}, {"seed", 3}};
    apply_override(j, "optimizer.lr=0.5");
    CHECK(j["optimizer"]["lr"] == 0.5);
    apply_override(j, "name=trial-3");
    CHECK(j["name"] == "trial-3");
    apply_override(j, "model.hidden.1=64");
    CHECK(j["model"]["hidden"] == json({1, 64}));
    apply_override(j, "training={\"steps\": 4}");
    CHECK(j["training"]["steps"] == 4);
    CHECK_THROWS_WITH_AS(apply_override(j, "model.hidden.5=1"), doctest::Contains("no index 5"),
                         job_error);
    CHECK_THROWS_WITH_AS(apply_override(j, "seed.x=1"),
                         doctest::Contains("--set seed.x=1: /seed is not an object"), job_error);
    CHECK_THROWS_WITH_AS(apply_override(j, "nonsense"), doctest::Contains("PATH=VALUE"), job_error);
    CHECK_THROWS_WITH_AS(apply_override(j, "=3"), doctest::Contains("empty path"), job_error);
    CHECK_THROWS_WITH_AS(apply_override(j, "a..b=1"), doctest::Contains("empty key"), job_error);
    apply_override(j, "optimizer.lrr=1");
    const auto p = problems_of(j);
    REQUIRE_MESSAGE(p.size() == 1, j.dump());
    CHECK(p[0].find("/optimizer/lrr: unknown key") == 0);
  }
}
