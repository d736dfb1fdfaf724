// Suite jobs named by the settings that tell them apart (core/suite/job_names), and numbered
// where those cannot make a name.
#include "core/suite/job_names.hpp"
#include "core/suite/suite_config.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

using namespace troupe;
using nlohmann::json;

TEST_SUITE("suite") {
  TEST_CASE("jobs are named by the settings that tell them apart, else numbered") {
    const auto names = [](const json& file) {
      std::vector<std::string> out;
      for (const auto& j : parse_suite(file).jobs)
        out.push_back(j.job.name);
      return out;
    };
    // The last part of each key, numbers in 4 significant digits, lists joined by "x".
    CHECK(
        names(
            {{"name", "cnn"},
             {"sweep",
              {{"optimizer.lr", {0.05, 1e-6}}, {"model.hidden", {{256, 128}}}, {"seed", {2}}}}}) ==
        std::vector<std::string>{"cnn-hidden=256x128,lr=0.05,seed=2",
                                 "cnn-hidden=256x128,lr=1e-06,seed=2"});
    CHECK(names({{"name", "s"},
                 {"model", {{"type", "cnn"}}},
                 {"sweep", {{"model.hidden", {{64}}}, {"model.channels", {{8}}}}}}) ==
          std::vector<std::string>{"s-channels=8,hidden=64"});
    // Values that round to the same name, an unspellable string and a name over 64 characters
    // are numbered, as every job was before.
    CHECK(names({{"name", "s"}, {"sweep", {{"optimizer.lr", {0.123451, 0.123452, 0.5}}}}}) ==
          std::vector<std::string>{"s-0", "s-1", "s-lr=0.5"});
    CHECK(names({{"name", "s"}, {"sweep", {{"model.activation", {"relu", "tanh"}}}}}) ==
          std::vector<std::string>{"s-activation=relu", "s-activation=tanh"});
    CHECK(names({{"name", std::string(60, 'n')}, {"sweep", {{"seed", {1, 2}}}}}) ==
          std::vector<std::string>{std::string(60, 'n') + "-0", std::string(60, 'n') + "-1"});
    // Two unnamed entries swept alike would share names: numbered by the suite's index.
    CHECK(names({{"name", "u"},
                 {"jobs", {json::object(), {{"optimizer", {{"lr", 0.5}}}}}},
                 {"sweep", {{"seed", {1, 2}}}}}) ==
          std::vector<std::string>{"u-0", "u-1", "u-2", "u-3"});
    // Two keys ending alike keep their whole keys.
    CHECK(short_keys({"a.b.lr", "lr", "x.y"}) ==
          std::map<std::string, std::string>{{"a.b.lr", "a.b.lr"}, {"lr", "lr"}, {"x.y", "y"}});
    CHECK(!settings_text({{"data", json{{"path", "/x"}}}}, {{"data", "data"}}));
    CHECK(!settings_text({{"name", "a b"}}, {{"name", "name"}}));
    CHECK(*settings_text({{"training.on", true}, {"x", 1e6}},
                         {{"training.on", "on"}, {"x", "x"}}) == "on=true,x=1e06");
  }
}
