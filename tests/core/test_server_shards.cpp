// async's sharded parameter server, its pure parts: how the weights are cut into shards, how a
// worker gathers a version's slices arriving in any order (with slices sent again after a
// shard was replaced), and that shards stepping their slices do what one server does with the
// whole, checkpoint state included.
#include "core/config/parse_job.hpp"
#include "core/data/data_source.hpp"
#include "core/errors.hpp"
#include "core/model/flat_parameters.hpp"
#include "core/optim/flat_optimizer.hpp"
#include "core/optim/optimizer_bytes.hpp"
#include "core/policy/async_strategy.hpp"
#include "core/policy/server_shards.hpp"
#include "core/policy/slice_gather.hpp"
#include "core/run/run_plan.hpp"
#include "core/train/shard_engine.hpp"

#include "job_problems.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <random>

using namespace troupe;
using verdict = slice_gather::verdict;

namespace {

// A model's flat layout: four parameter tensors, then two buffers of 3 values each.
const tensor_layout layout = {{"a.weight", {8, 5}},     {"a.bias", {8}},
                              {"b.weight", {3, 8}},     {"b.bias", {3}},
                              {"bn.running_mean", {3}}, {"bn.running_var", {3}}};
constexpr int64_t parameter_values = 40 + 8 + 24 + 3;
constexpr int64_t buffer_values = 6;

// One whole server: the layout's tensors in flat buffers and an optimizer over them.
struct whole_server {
  std::vector<at::Tensor> parameters;
  std::vector<at::Tensor> buffers;
  std::unique_ptr<flat_parameters> flat;
  std::unique_ptr<flat_optimizer> optimizer;

  whole_server(const optimizer_config& config, const at::Tensor& initial) {
    named_tensors params, bufs;
    int64_t offset = 0;
    for (std::size_t i = 0; i < layout.size(); ++i) {
      const auto& [name, shape] = layout[i];
      int64_t n = 1;
      for (auto d : shape)
        n *= d;
      auto t = initial.narrow(0, offset, n).clone().view(shape);
      if (i < 4) {
        t.set_requires_grad(true);
        parameters.push_back(t);
        params.emplace_back(name, t);
      } else {
        buffers.push_back(t);
        bufs.emplace_back(name, t);
      }
      offset += n;
    }
    flat = std::make_unique<flat_parameters>(params, bufs);
    optimizer = std::make_unique<flat_optimizer>(config, *flat, parameters);
  }
  void apply(const at::Tensor& gradient, double lr) {
    flat->grads().copy_(gradient);
    optimizer->step(lr);
    flat->adopt_combined_buffers();
  }
};

std::vector<server_shard> shards_of_layout(int64_t count) {
  return split_server({40, 8, 24, 3}, buffer_values, count);
}

at::Tensor joined(const std::vector<std::unique_ptr<shard_engine>>& shards) {
  std::vector<at::Tensor> slices;
  for (const auto& s : shards)
    slices.push_back(s->weights());
  return at::cat(slices);
}

}  // namespace

TEST_SUITE("server_shards") {
  TEST_CASE("shards are runs of whole tensors, as even as the tensors allow, buffers last") {
    const auto s = split_server({100, 10, 100, 10, 50, 5}, 7, 3);
    REQUIRE(s.size() == 3);
    int64_t begin = 0, first = 0;
    for (const auto& shard : s) {
      CHECK(shard.begin == begin);
      CHECK(shard.first_parameter == first);
      CHECK(shard.parameters >= 1);
      begin += shard.size;
      first += shard.parameters;
    }
    CHECK(begin == 275 + 7);
    CHECK(first == 6);
    // 275 values: boundaries nearest 91.7 and 183.3 fall after 100 and after 210.
    CHECK(s[0].parameters == 1);
    CHECK(s[1].parameters == 2);
    CHECK(s[2].parameter_values == 65);
    CHECK(s[2].size == 65 + 7);
    // One tensor much larger than the rest still leaves a tensor for every later shard.
    const auto lopsided = split_server({1000, 1, 1}, 0, 3);
    CHECK(lopsided[0].parameters == 1);
    CHECK(lopsided[1].parameters == 1);
    CHECK(lopsided[2].parameters == 1);
    CHECK_THROWS_AS(split_server({1, 2}, 0, 3), std::invalid_argument);
    CHECK_THROWS_AS(split_server({1, 2}, 0, 0), std::invalid_argument);
  }

  TEST_CASE("a version completes once, when its last slice is in, whatever the order") {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 200; ++trial) {
      const int64_t shards = 1 + static_cast<int64_t>(rng() % 5);
      slice_gather g(shards);
      int64_t version = -1;
      std::vector<int64_t> handed;  // the versions this worker was handed before
      for (int step = 0; step < 20; ++step) {
        version += 1 + static_cast<int64_t>(rng() % 3);  // versions a worker is handed rise
        // Its slices, each maybe twice (a hand-out sent again to a replacement shard), mixed
        // with slices of versions it was handed and completed before (sent again too).
        std::vector<std::pair<int64_t, int64_t>> arrivals;
        for (int64_t k = 0; k < shards; ++k) {
          arrivals.emplace_back(version, k);
          if (rng() % 4 == 0)
            arrivals.emplace_back(version, k);
          if (!handed.empty() && rng() % 3 == 0)
            arrivals.emplace_back(handed[rng() % handed.size()], k);
        }
        std::shuffle(arrivals.begin(), arrivals.end(), rng);
        std::map<int64_t, int> taken;
        int completions = 0;
        for (std::size_t i = 0; i < arrivals.size(); ++i) {
          const auto [v, k] = arrivals[i];
          const auto what = g.on_slice(v, k);
          if (what != verdict::drop) {
            CHECK(v == version);
            CHECK(++taken[k] == 1);  // a shard's slice is taken once
          }
          if (what == verdict::take_complete) {
            ++completions;
            CHECK(static_cast<int64_t>(taken.size()) == shards);
          }
        }
        CHECK(completions == 1);
        CHECK(g.completed() == version);
        handed.push_back(version);
      }
    }
  }

  TEST_CASE("a newer hand-out overtakes an older one half gathered") {
    slice_gather g(3);
    CHECK(g.on_slice(4, 0) == verdict::take);
    CHECK(g.on_slice(6, 1) == verdict::take);  // the older one is abandoned
    CHECK(g.on_slice(4, 1) == verdict::drop);
    CHECK(g.on_slice(6, 0) == verdict::take);
    CHECK(g.on_slice(6, 2) == verdict::take_complete);
    CHECK(g.on_slice(4, 2) == verdict::drop);
    CHECK_THROWS_AS(g.on_slice(7, 3), std::invalid_argument);
    CHECK_THROWS_AS(g.on_slice(7, -1), std::invalid_argument);
  }

  TEST_CASE("shards step their slices as one server steps the whole, state included") {
    for (const char* kind : {"sgd", "adam", "rmsprop"}) {
      CAPTURE(kind);
      optimizer_config config;
      config.kind = parse_job({{"optimizer", {{"type", kind}}}}).optimizer.kind;
      config.momentum = 0.9;
      config.nesterov = std::string(kind) == "sgd";
      config.weight_decay = 0.01;
      at::manual_seed(3);
      const auto initial = at::randn({parameter_values + buffer_values});
      whole_server whole(config, initial);
      for (int64_t count : {1, 2, 3, 4}) {
        CAPTURE(count);
        whole_server reference(config, initial);
        std::vector<std::unique_ptr<shard_engine>> shards;
        for (const auto& s : shards_of_layout(count))
          shards.push_back(std::make_unique<shard_engine>(config, layout, s, initial));
        at::manual_seed(11);
        for (int step = 0; step < 6; ++step) {
          const auto gradient = at::randn({parameter_values + buffer_values});
          const double lr = 0.05 / (1 + step);
          reference.apply(gradient, lr);
          for (auto& s : shards)
            s->apply(gradient.narrow(0, s->shard().begin, s->shard().size), lr);
          CHECK(at::equal(joined(shards), reference.flat->weights()));
        }
        // The shards' states joined are the whole server's, byte for byte...
        std::vector<std::string> states;
        for (const auto& s : shards)
          states.push_back(s->optimizer_state());
        const auto whole_state = reference.optimizer->save();
        CHECK(join_optimizer_bytes(states) == whole_state);
        // ...and shards of another count restored from it go on as the whole server does.
        const auto other = count % 4 + 1;
        std::vector<std::unique_ptr<shard_engine>> restored;
        for (const auto& s : shards_of_layout(other)) {
          restored.push_back(std::make_unique<shard_engine>(config, layout, s, initial));
          restored.back()->restore(reference.flat->weights(), whole_state);
        }
        const auto gradient = at::randn({parameter_values + buffer_values});
        reference.apply(gradient, 0.01);
        for (auto& s : restored)
          s->apply(gradient.narrow(0, s->shard().begin, s->shard().size), 0.01);
        CHECK(at::equal(joined(restored), reference.flat->weights()));
      }
    }
  }

  TEST_CASE("random push orders replayed on shards: every hand-out is the whole server's") {
    // The async strategy decides, for pushes arriving in random orders from several workers,
    // when each gradient is applied and when each worker gets weights; one whole server and
    // three shards carry those decisions out. The shards keep each pushed slice by rank until
    // its apply (a worker pushes once per hand-out), and a worker gathers its slices in a random
    // order, some twice: every hand-out equals the whole server's weights, bit for bit.
    std::mt19937 rng(5);
    optimizer_config config;
    config.momentum = 0.9;
    for (int trial = 0; trial < 20; ++trial) {
      CAPTURE(trial);
      const int64_t ranks = 1 + static_cast<int64_t>(rng() % 4);
      const step_rules rules(1 + static_cast<int64_t>(rng() % 5), 2, 0);
      async_strategy strategy(ranks, trial % 2 ? std::optional<int64_t>(1) : std::nullopt,
                              trial % 3 == 0, rules);
      at::manual_seed(trial);
      const auto initial = at::randn({parameter_values + buffer_values});
      whole_server whole(config, initial);
      const auto slices = shards_of_layout(3);
      std::vector<std::unique_ptr<shard_engine>> shards;
      for (const auto& s : slices)
        shards.push_back(std::make_unique<shard_engine>(config, layout, s, initial));
      std::vector<std::map<int64_t, at::Tensor>> pushed(shards.size());  // by shard, by rank
      std::vector<at::Tensor> held(static_cast<std::size_t>(ranks));     // each worker's weights
      std::vector<slice_gather> gathers(static_cast<std::size_t>(ranks), slice_gather(3));
      std::vector<std::pair<int64_t, int64_t>> busy;
      bool done = false;
      const auto take = [&](const step_actions& out) {
        for (const auto& a : out) {
          REQUIRE(!std::holds_alternative<act::violation>(a));
          if (const auto* h = std::get_if<act::hand_out>(&a)) {
            auto& weights = held[static_cast<std::size_t>(h->rank)];
            weights = at::zeros_like(initial);
            std::vector<int64_t> order{0, 1, 2, static_cast<int64_t>(rng() % 3)};
            std::shuffle(order.begin(), order.end(), rng);
            int completions = 0;
            for (auto k : order) {
              const auto verdict =
                  gathers[static_cast<std::size_t>(h->rank)].on_slice(h->version, k);
              if (verdict == slice_gather::verdict::drop)
                continue;
              const auto& s = slices[static_cast<std::size_t>(k)];
              weights.narrow(0, s.begin, s.size)
                  .copy_(shards[static_cast<std::size_t>(k)]->weights());
              completions += verdict == slice_gather::verdict::take_complete;
            }
            CHECK(completions == 1);
            CHECK(at::equal(weights, whole.flat->weights()));
            busy.emplace_back(h->rank, h->step);
          } else if (const auto* p = std::get_if<act::apply_push>(&a)) {
            const double lr = 0.05 * p->lr_scale;
            // The gradient the worker pushed, at every shard already (acknowledged).
            at::manual_seed(1000 * p->rank + p->step);
            const auto gradient = at::randn({parameter_values + buffer_values}) +
                                  held[static_cast<std::size_t>(p->rank)] * 0.01;
            whole.apply(gradient, lr);
            for (std::size_t k = 0; k < shards.size(); ++k) {
              pushed[k][p->rank] = gradient.narrow(0, slices[k].begin, slices[k].size).clone();
              shards[k]->apply(pushed[k].at(p->rank), lr);
              pushed[k].erase(p->rank);
            }
          } else if (std::holds_alternative<act::training_done>(a)) {
            done = true;
          }
        }
      };
      take(strategy.start());
      double now = 0;
      while (!done) {
        REQUIRE(!busy.empty());
        const auto i = rng() % busy.size();
        const auto [rank, step] = busy[i];
        busy.erase(busy.begin() + static_cast<std::ptrdiff_t>(i));
        take(strategy.on_push({rank, step, 1.0, 1}, now += 0.25));
      }
      CHECK(at::equal(joined(shards), whole.flat->weights()));
    }
  }

  TEST_CASE("an optimizer state's parts: only whole parameters of it, and they join back") {
    optimizer_config config;
    const auto initial = at::randn({parameter_values + buffer_values});
    whole_server s(config, initial);
    s.apply(at::randn({parameter_values + buffer_values}), 0.1);
    const auto state = s.optimizer->save();
    CHECK(join_optimizer_bytes(
              {optimizer_bytes_part(state, 0, 1), optimizer_bytes_part(state, 1, 3)}) == state);
    CHECK_THROWS_AS(optimizer_bytes_part(state, 2, 3), std::runtime_error);
    CHECK_THROWS_AS(optimizer_bytes_part(state, -1, 1), std::runtime_error);
    CHECK_THROWS_AS(optimizer_bytes_part("not a state", 0, 1), std::runtime_error);
    CHECK_THROWS_AS(join_optimizer_bytes({}), std::runtime_error);
  }

  TEST_CASE("ps_shards: async only, within the model's tensors, one per node by default") {
    using nlohmann::json;
    const json base = {{"parallelism", {{"policy", "async"}, {"replicas", 2}, {"ps_shards", 3}}}};
    const auto job = parse_job(base);
    CHECK(job.parallelism.ps_shards == 3);
    CHECK(parse_job(json::parse(to_json(job).dump())).parallelism.ps_shards == 3);
    const auto plan = make_run_plan(job, describe_data(job.data));
    CHECK(plan.server_shards() == 3);
    CHECK(plan.sharded_server());
    CHECK(server_shards_of(plan).size() == 3);
    CHECK(test::any_contains(
        test::job_problems({{"parallelism", {{"policy", "sync"}, {"ps_shards", 2}}}}),
        "ps_shards"));
    CHECK(test::any_contains(
        test::job_problems({{"parallelism", {{"policy", "async"}, {"ps_shards", 0}}}}),
        "ps_shards"));
    // More shards than the model has tensors: refused when planned, by key.
    auto many = parse_job({{"parallelism", {{"policy", "async"}, {"ps_shards", 200}}}});
    const auto problems = test::problems_of(
        [](const job_config& j) { return make_run_plan(j, describe_data(j.data)); }, many);
    CHECK(test::any_contains(problems, "/parallelism/ps_shards"));
    // Unsaid: one, in a process and across nodes.
    auto alone = parse_job({{"parallelism", {{"policy", "async"}}}});
    CHECK(make_run_plan(alone, describe_data(alone.data)).server_shards() == 1);
    CHECK_FALSE(make_run_plan(alone, describe_data(alone.data)).sharded_server());
    auto nodes = parse_job(
        {{"parallelism", {{"policy", "async"}, {"replicas", 3}}}, {"cluster", {{"nodes", 3}}}});
    CHECK(make_run_plan(nodes, describe_data(nodes.data)).server_shards() == 1);
  }

  TEST_CASE("plan.txt says what an async worker across nodes sends: pushes and pulls, no ring") {
    using nlohmann::json;
    const json base = {{"parallelism", {{"policy", "async"}, {"replicas", 3}}},
                       {"cluster", {{"nodes", 3}}}};
    auto job = parse_job(base);
    const auto whole = render_plan(make_run_plan(job, describe_data(job.data)));
    CHECK(whole.find("pushes") != std::string::npos);
    CHECK(whole.find("(through the coordinator)") != std::string::npos);
    CHECK(whole.find("ring all-reduce") == std::string::npos);
    job.parallelism.ps_shards = 3;
    job.parallelism.compression = compression_kind::int8;
    const auto sharded = render_plan(make_run_plan(job, describe_data(job.data)));
    CHECK(sharded.find("a slice from each shard") != std::string::npos);
    CHECK(sharded.find("a quarter on the wire (int8)") != std::string::npos);
  }
}
