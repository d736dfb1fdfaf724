// One shard of async's sharded parameter server (actors/workers/server_shard), spoken to
// directly: it takes a worker's slice and applies it when told, as a whole server would that
// part; it refuses slices of the wrong size or from ranks the run does not have (naming its
// slice size), skips an apply whose slice never came (it went to the shard this one replaced),
// and answers weights and checkpoint questions with its part.
#include "actors/cluster/system_config.hpp"
#include "actors/workers/server_shard.hpp"
#include "core/train/shard_engine.hpp"
#include "training_fixtures.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <caf/all.hpp>

#include <chrono>
#include <string>

using namespace troupe;

namespace {

constexpr auto wait_s = std::chrono::seconds(30);

struct shard_fixture {
  context_ptr context;
  server_shard slice;
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> system;

  shard_fixture() {
    auto job = test::small_job(2, 4);
    job.parallelism.policy = policy_kind::async;
    job.parallelism.ps_shards = 3;
    auto data = test::small_data(job);
    auto plan = make_run_plan(job, facts_of(*data));
    slice = server_shards_of(plan).at(1);
    context = make_worker_context(std::move(plan), std::move(data));
    system = std::make_unique<caf::actor_system>(configure_system(cfg));
  }
};

/// Pushes `gradient` as rank `rank`'s slice; the error's text, or "" when the shard took it.
std::string push(caf::scoped_actor& self, const server_shard_actor& shard, int64_t rank,
                 const at::Tensor& gradient) {
  std::string error = "no answer";
  self->request(shard, wait_s, push_atom_v, async_push{{rank, 0, 0.0, 1, 0}, 0, gradient})
      .receive([&](caf::ok_atom) { error.clear(); },
               [&](caf::error& e) { error = self->system().render(e); });
  return error;
}

at::Tensor weights_of(caf::scoped_actor& self, const server_shard_actor& shard) {
  at::Tensor out;
  self->request(shard, wait_s, weights_atom_v)
      .receive([&](at::Tensor& w) { out = w; }, [&](caf::error&) {});
  return out;
}

}  // namespace

TEST_SUITE("server_shard") {
  TEST_CASE("a shard applies its slice as a whole server applies that part") {
    shard_fixture f;
    caf::scoped_actor self{*f.system};
    auto shard = spawn_server_shard(*f.system, f.context, 1);
    const auto& plan = *f.context->plan;
    shard_engine reference(plan.job.optimizer, plan.model.parameter_layout, f.slice,
                           f.context->initial_weights);
    CHECK(at::equal(weights_of(self, shard), reference.weights()));
    at::manual_seed(4);
    for (int step = 0; step < 3; ++step) {
      const auto gradient = at::randn({f.slice.size});
      REQUIRE(push(self, shard, step % 2, gradient).empty());
      self->send(shard, apply_atom_v, 0.1, int64_t{step % 2}, at::Tensor());
      reference.apply(gradient, 0.1);
    }
    CHECK(at::equal(weights_of(self, shard), reference.weights()));
    // An apply whose slice never came here is skipped; the next one still applies.
    self->send(shard, apply_atom_v, 0.1, int64_t{1}, at::Tensor());
    CHECK(at::equal(weights_of(self, shard), reference.weights()));
    checkpoint_part part;
    self->request(shard, wait_s, checkpoint_atom_v, int64_t{7})
        .receive([&](checkpoint_part& p) { part = std::move(p); }, [&](caf::error&) {});
    CHECK(part.step == 7);
    CHECK(part.part == 1);
    CHECK(at::equal(part.weights, reference.weights()));
    CHECK(part.optimizer == reference.optimizer_state());
    self->send_exit(shard, caf::exit_reason::user_shutdown);
  }

  TEST_CASE("a slice of the wrong size, none at all, or from a rank not in the run is refused") {
    shard_fixture f;
    caf::scoped_actor self{*f.system};
    auto shard = spawn_server_shard(*f.system, f.context, 1);
    const auto size = std::to_string(f.slice.size);
    CHECK(push(self, shard, 0, at::zeros({f.slice.size + 1})).find("slices of " + size) !=
          std::string::npos);
    CHECK(push(self, shard, 0, at::Tensor()).find("slices of " + size) != std::string::npos);
    CHECK(push(self, shard, 2, at::zeros({f.slice.size})).find("ranks below 2") !=
          std::string::npos);
    CHECK(push(self, shard, -1, at::zeros({f.slice.size})).find("ranks below 2") !=
          std::string::npos);
    // Bytes that claim to be packed and are not.
    CHECK(push(self, shard, 0, at::zeros({16}, at::kByte)).find("bad packed slice") !=
          std::string::npos);
    // It is still there and still right.
    CHECK(push(self, shard, 1, at::zeros({f.slice.size})).empty());
    self->send_exit(shard, caf::exit_reason::user_shutdown);
  }
}
