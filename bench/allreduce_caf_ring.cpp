// allreduce_bench's rank over troupe's actor ring: each rank publishes a ring member on
// 127.0.0.1 through actors/links/guarded_links (as troupe's nodes do: with --tls over mutual
// TLS, with certificates of a CA made for the run) and connects to its successor's.
#include "bench/allreduce_caf_ring.hpp"

#include "actors/cluster/system_config.hpp"
#include "actors/exchange/ring_exchange.hpp"
#include "actors/links/guarded_links.hpp"
#include "actors/links/tls_session.hpp"
#include "bench/allreduce_rank.hpp"
#include "core/cluster/link_limits.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <unistd.h>
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace troupe::bench::allreduce {

using namespace std::chrono_literals;

namespace {

struct member_state {
  std::optional<ring_exchange<caf::actor>> ring;
  caf::response_promise done;
  static inline const char* name = "ring_member";
};

// One rank: (link, successor) once; then per round (run, round, buffer) answered with ok when
// the buffer holds the sum.
caf::behavior ring_member(caf::stateful_actor<member_state>* self, int64_t rank, int64_t ranks,
                          int64_t bucket_elements, int64_t window) {
  at::set_num_threads(1);
  self->state.ring.emplace(rank, ranks, ring_options{bucket_elements, window});
  return {
      [self](link_atom, const caf::actor& successor) { self->state.ring->link(successor); },
      [self](run_atom, int64_t round, at::Tensor& buffer) {
        auto& st = self->state;
        st.done = self->make_response_promise();
        if (st.ring->start(self, round, buffer))
          st.done.deliver(caf::ok_atom_v);
        return st.done;
      },
      [self](ring_atom, const ring_meta& meta, const at::Tensor& chunk) {
        if (self->state.ring->on_chunk(self, meta, chunk))
          self->state.done.deliver(caf::ok_atom_v);
      },
  };
}

caf::actor connect_to(caf::actor_system& system, guarded_links& links, uint16_t port) {
  caf::scoped_actor self{system};
  caf::actor successor;
  self->request(links.middleman(), 30s, caf::connect_atom_v, std::string("127.0.0.1"), port)
      .receive([&](caf::node_id&, caf::strong_actor_ptr& handle,
                   std::set<std::string>&) { successor = caf::actor_cast<caf::actor>(handle); },
               [&](caf::error& e) { throw std::runtime_error("connect: " + system.render(e)); });
  return successor;
}

void rank_body(caf::actor_system& system, guarded_links& links, int64_t rank, int64_t ranks,
               const std::vector<double>& sizes_mb, int iters, int warmup, double bucket_mb,
               int64_t window, int to_parent, int from_parent) {
  auto member = system.spawn<caf::detached>(ring_member, rank, ranks, bucket_of(bucket_mb), window);
  auto port = links.publish(member, 0, "127.0.0.1");
  if (!port)
    throw std::runtime_error("publish: " + system.render(port.error()));
  write_line(to_parent, std::to_string(*port));
  const auto ports = read_ports(from_parent);
  const auto successor =
      connect_to(system, links, ports[static_cast<std::size_t>((rank + 1) % ranks)]);
  write_line(to_parent, "connected");
  caf::scoped_actor self{system};
  self->send(member, link_atom_v, successor);
  int64_t round = 0;
  const auto all_reduce = [&](at::Tensor buffer) {
    self->request(member, 120s, run_atom_v, round++, buffer)
        .receive([](caf::ok_atom) {},
                 [&](caf::error& e) { throw std::runtime_error(system.render(e)); });
  };
  nlohmann::json report = {{"ranks", ranks},
                           {"tls", links.tls()},
                           {"bucket_mb", bucket_mb},
                           {"window", window},
                           {"results", nlohmann::json::array()}};
  report["results"] = time_sizes(
      rank, ranks, sizes_mb, iters, warmup,
      [&](std::size_t, at::Tensor& buffer) { all_reduce(buffer); },
      [&] { all_reduce(at::zeros({1})); });
  // Report, then leave once the parent has every rank's report: a rank that is done may still
  // have chunks queued for its successor, and every rank reporting means none is waiting. The
  // actor system's shutdown is skipped: in CAF 0.17 it waits for every detached actor's thread,
  // and a member that a peer's connection still references was seen to keep that wait going
  // forever (actors/cluster/run_node.cpp has the same guard).
  write_line(to_parent, report.dump());
  read_line(from_parent);
  std::fflush(nullptr);
  ::_exit(0);
}

}  // namespace

[[noreturn]] void run_rank(int64_t rank, int64_t ranks, const std::vector<double>& sizes_mb,
                           int iters, int warmup, double bucket_mb, int64_t window,
                           const std::string& tls_dir, int to_parent, int from_parent) {
  caf::actor_system_config cfg;
  caf::actor_system system{configure_networked(cfg)};
  link_options options;
  if (!tls_dir.empty())
    options.tls = tls_files_in(tls_dir, rank_name(rank));
  options.limits.max_message_bytes = largest_message_bytes(0, bucket_mb, 0);
  options.limits.idle_timeout_s = 30;
  options.log = [rank](const std::string& line) {
    std::cerr << "rank " << rank << ": " << line << "\n";
  };
  try {
    guarded_links links{system, options};
    rank_body(system, links, rank, ranks, sizes_mb, iters, warmup, bucket_mb, window, to_parent,
              from_parent);
  } catch (const std::exception& e) {
    std::cerr << "rank " << rank << ": " << e.what() << "\n";
  }
  std::fflush(nullptr);
  ::_exit(1);
}

}  // namespace troupe::bench::allreduce
