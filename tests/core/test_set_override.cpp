// `--set PATH=VALUE` (core/config/overrides): JSON values and strings, paths through objects and
// arrays, the suite's merge-patch rules, a training length replacing the other, and bad
// assignments named by themselves with the job left untouched.
#include "core/config/overrides.hpp"
#include "core/config/parse_job.hpp"
#include "core/errors.hpp"
#include "job_problems.hpp"

#include <doctest/doctest.h>

using namespace troupe;
using nlohmann::json;
using test::job_problems;
using test::only_problem;

TEST_SUITE("job_config") {
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
    // A key twice in an object value: refused as in a job file (the last won, silently).
    CHECK_THROWS_WITH_AS(apply_override(j, "training={\"steps\": 20, \"steps\": 30}"),
                         doctest::Contains("--set training={\"steps\": 20, \"steps\": 30}: the "
                                           "value: /steps: given twice in the same object"),
                         job_error);
    CHECK(j["training"]["steps"] == 4);
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
    CHECK(job_problems(j).size() == 1);
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
    // A value that begins as JSON and breaks is a typo, named where it breaks, not a string.
    CHECK(only_problem([&] {
            apply_override(j, "model={\"type\":");
          }).find("--set model={\"type\":: the value:1:9: invalid JSON: ") == 0);
    CHECK(only_problem([&] {
            apply_override(j, "model.hidden= [64,");
          }).find("begins with '[' is read as JSON") != std::string::npos);
    CHECK(j == before);
    apply_override(j, "name=\"[draft]\"");  // the string, given as one
    CHECK(j["name"] == "[draft]");
  }

  TEST_CASE("--set of an unknown key is left for parse_job to report") {
    json j = json::object();
    apply_override(j, "optimizer.lrr=1");
    const auto p = job_problems(j);
    REQUIRE_MESSAGE(p.size() == 1, j.dump());
    CHECK(p[0].find("/optimizer/lrr: unknown key") == 0);
  }
}
