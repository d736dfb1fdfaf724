// All-reduce between processes on one host: troupe's ring (actors/exchange/ring_exchange.hpp over
// CAF's middleman on loopback, the path sync training takes between hosts) or its shared-memory
// segment (core/collective/host_reduction.hpp, the path node processes on one host take), or
// the socket ring (core/collective/socket_ring.hpp: plain TCP between ring neighbours; with
// --tls, TLS 1.3 on each connection), or gloo's halving-doubling (core/collective/gloo_mesh.hpp,
// cluster.collective "gloo"), on float32 buffers.
//
//   allreduce_bench --ranks 3 [--sizes-mb 1,16,128] [--iters 10] [--warmup 2] [--bucket-mb 1]
//                   [--window 8] [--tls] [--transport ring|tcp|shm|gloo]
//
// Forks `ranks` processes (before any actor system or LibTorch thread exists). Ring: each
// publishes a ring member on 127.0.0.1 through actors/links/guarded_links (as troupe's nodes do:
// with
// --tls over mutual TLS, with certificates of a CA made for this run) and connects to its
// successor's. Shm: this process creates one segment per size (and one for the barrier), each
// rank opens them. Then, per size: a barrier (an all-reduce of one element), then one timed
// all-reduce; warm-up rounds first. Every rank checks the sum of the first round. Prints one
// JSON object: per size the median time of rank 0, the algorithm bandwidth bytes / time and the
// bus bandwidth 2(N - 1)/N x bytes / time (what each link carries, comparable across N), in
// GB/s (1e9 bytes).
#include "actors/cluster/system_config.hpp"
#include "actors/exchange/ring_exchange.hpp"
#include "actors/links/guarded_links.hpp"
#include "actors/links/tls_session.hpp"
#include "bench/median.hpp"
#include "core/cluster/certs.hpp"
#include "core/cluster/link_limits.hpp"
#include "core/collective/gloo_mesh.hpp"
#include "core/collective/host_reduction.hpp"
#include "core/collective/socket_ring.hpp"
#include "core/io/hex.hpp"
#include "core/job/job_config.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace troupe;
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

std::string read_line(int fd) {
  std::string line;
  char c = 0;
  while (::read(fd, &c, 1) == 1 && c != '\n')
    line += c;
  return line;
}

void write_line(int fd, const std::string& line) {
  const auto text = line + "\n";
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    std::perror("allreduce_bench: write");
}

// Every rank's port, as the parent sends them: one line, separated by spaces.
std::vector<uint16_t> read_ports(int fd) {
  std::vector<uint16_t> ports;
  std::istringstream in(read_line(fd));
  for (unsigned p; in >> p;)
    ports.push_back(static_cast<uint16_t>(p));
  return ports;
}

std::string rank_name(int64_t rank) {
  return "rank-" + std::to_string(rank);
}

// A CA made for this run and a certificate per rank, in a fresh directory.
std::string make_certificates(int64_t ranks) {
  auto dir = (std::filesystem::temp_directory_path() / "allreduce-tls-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr)
    throw std::runtime_error("cannot make a directory for certificates");
  make_authority(dir, 1);
  for (int64_t r = 0; r < ranks; ++r)
    issue_certificate(dir, rank_name(r), 1);
  return dir;
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
               int64_t window, int to_parent, int from_parent);

// The body of rank `rank`: writes its JSON report (rank 0's carries the timings) and exits. A
// rank that fails says why and exits at once: unwinding would end the actor system, whose
// shutdown waits for the ring member's thread forever.
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

// The float32 values in `mb` MiB.
int64_t floats_in(double mb) {
  return static_cast<int64_t>(mb * (1 << 20) / 4);
}

// A ring's bucket of `bucket_mb` MiB, in values: at least one.
int64_t bucket_of(double bucket_mb) {
  return std::max<int64_t>(1, floats_in(bucket_mb));
}

std::vector<int64_t> numels_of(const std::vector<double>& sizes_mb) {
  std::vector<int64_t> numels;
  for (double mb : sizes_mb)
    numels.push_back(floats_in(mb));
  return numels;
}

// Per size: a barrier, then one timed all-reduce of a buffer every rank fills with rank + 1;
// warm-up rounds first; the first round's sum checked. The JSON rows of rank `rank`'s timings.
nlohmann::json time_sizes(int64_t rank, int64_t ranks, const std::vector<double>& sizes_mb,
                          int iters, int warmup,
                          const std::function<void(std::size_t, at::Tensor&)>& reduce,
                          const std::function<void()>& barrier) {
  const auto numels = numels_of(sizes_mb);
  auto rows = nlohmann::json::array();
  for (std::size_t k = 0; k < numels.size(); ++k) {
    auto buffer = at::empty({numels[k]});
    std::vector<double> times;
    for (int i = 0; i < warmup + iters; ++i) {
      buffer.fill_(static_cast<float>(rank + 1));
      barrier();  // nobody starts before everyone is ready
      const auto start = std::chrono::steady_clock::now();
      reduce(k, buffer);
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (i == 0) {
        const float want = static_cast<float>(ranks * (ranks + 1) / 2);
        if (!at::all(buffer == want).item<bool>())
          throw std::runtime_error("wrong sum of " + std::to_string(numels[k]) + " elements");
      }
      if (i >= warmup)
        times.push_back(s);
    }
    const double median = bench::median(times);
    const double bytes = static_cast<double>(numels[k]) * 4;
    rows.push_back({{"size_mb", sizes_mb[k]},
                    {"median_s", median},
                    {"times_s", times},
                    {"algbw_gbs", bytes / median / 1e9},
                    {"busbw_gbs", 2.0 * static_cast<double>(ranks - 1) /
                                      static_cast<double>(ranks) * bytes / median / 1e9}});
  }
  return rows;
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

// Runs a rank's `body` and exits: 0 when it returned, 1 (saying why) when it threw.
[[noreturn]] void run_rank_body(int64_t rank, const std::function<void()>& body) {
  int code = 1;
  try {
    body();
    code = 0;
  } catch (const std::exception& e) {
    std::cerr << "rank " << rank << ": " << e.what() << "\n";
  }
  std::fflush(nullptr);
  ::_exit(code);
}

// The timings of rank `rank` over shared memory (the path node processes on one host take):
// per size, a one-element all-reduce as the barrier, then the timed one, as over the ring.
[[noreturn]] void shm_rank(int64_t rank, const std::vector<host_segment_spec>& segments,
                           const host_segment_spec& barrier_spec,
                           const std::vector<double>& sizes_mb, int iters, int warmup,
                           int to_parent, int from_parent) {
  run_rank_body(rank, [&] {
    at::set_num_threads(1);
    const auto ranks = barrier_spec.ranks;
    auto barrier = host_reduction::open(barrier_spec);
    // Every rank has its own core on the machines this runs on; a spin beyond that is wasted.
    const auto spin = ranks <= static_cast<int64_t>(std::thread::hardware_concurrency())
                          ? std::chrono::microseconds{200}
                          : std::chrono::microseconds{0};
    barrier->set_spin(spin);
    nlohmann::json report = {
        {"ranks", ranks}, {"transport", "shm"}, {"results", nlohmann::json::array()}};
    std::vector<std::unique_ptr<host_reduction>> opened;
    for (const auto& spec : segments) {
      opened.push_back(host_reduction::open(spec));
      opened.back()->set_spin(spin);
    }
    auto one = at::zeros({1});
    report["results"] = time_sizes(
        rank, ranks, sizes_mb, iters, warmup,
        [&](std::size_t k, at::Tensor& buffer) { opened[k]->all_reduce(rank, buffer); },
        [&] { barrier->all_reduce(rank, one); });
    write_line(to_parent, "0");  // no port: nothing to connect
    read_line(from_parent);
    write_line(to_parent, "connected");
    write_line(to_parent, report.dump());
    read_line(from_parent);
  });
}

// The timings of rank `rank` over the socket ring (core/collective/socket_ring.hpp: plain TCP
// between ring neighbours, each connection opened with the ring's secret), as over CAF's ring.
[[noreturn]] void tcp_rank(int64_t rank, int64_t ranks, const std::array<uint8_t, 32>& secret,
                           const std::vector<double>& sizes_mb, int iters, int warmup,
                           double bucket_mb, int64_t window, const std::string& tls_dir,
                           int to_parent, int from_parent) {
  run_rank_body(rank, [&] {
    at::set_num_threads(1);
    std::unique_ptr<tls_context> tls;
    if (!tls_dir.empty())
      tls = std::make_unique<tls_context>(tls_files_in(tls_dir, rank_name(rank)));
    const std::string host = "127.0.0.1";
    ring_listener listener(host);
    write_line(to_parent, std::to_string(listener.port()));
    const auto ports = read_ports(from_parent);
    socket_fd to_successor, from_predecessor;
    if (ranks > 1) {
      const auto next = ports[static_cast<std::size_t>((rank + 1) % ranks)];
      to_successor = connect_to_successor(host, next, ring_hello{secret, 0, rank}, 30);
      from_predecessor =
          listener.accept_from(ring_hello{secret, 0, (rank + ranks - 1) % ranks}, 30);
    }
    write_line(to_parent, "connected");
    socket_ring ring(std::move(to_successor), std::move(from_predecessor), rank, ranks,
                     ring_options{bucket_of(bucket_mb), window});
    if (tls)
      ring.secure(tls->native());
    int64_t round = 0;
    auto one = at::zeros({1});
    nlohmann::json report = {{"ranks", ranks},        {"transport", "tcp"},
                             {"tls", tls != nullptr}, {"bucket_mb", bucket_mb},
                             {"window", window},      {"results", nlohmann::json::array()}};
    report["results"] = time_sizes(
        rank, ranks, sizes_mb, iters, warmup,
        [&](std::size_t, at::Tensor& buffer) { ring.all_reduce(round++, buffer, 60); },
        [&] { ring.all_reduce(round++, one, 60); });
    write_line(to_parent, report.dump());
    read_line(from_parent);
  });
}

// The timings of rank `rank` over gloo's halving-doubling (core/collective/gloo_mesh.hpp, the
// job's cluster.collective "gloo"): each rank's rendezvous part goes up as hex, every rank's
// comes back, as the coordinator relays them.
[[noreturn]] void gloo_rank(int64_t rank, int64_t ranks, const std::vector<double>& sizes_mb,
                            int iters, int warmup, int to_parent, int from_parent) {
  run_rank_body(rank, [&] {
    at::set_num_threads(1);
    gloo_mesh mesh("127.0.0.1", rank, ranks, 60);
    write_line(to_parent, to_hex(mesh.address()));
    std::vector<std::string> parts;
    std::istringstream in(read_line(from_parent));
    for (std::string hex; in >> hex;)
      parts.push_back(from_hex(hex));
    mesh.connect(parts);
    mesh.join(60);
    write_line(to_parent, "connected");
    int64_t round = 0;
    auto one = at::zeros({1});
    nlohmann::json report = {{"ranks", ranks}, {"transport", "gloo"}, {"results", nullptr}};
    report["results"] = time_sizes(
        rank, ranks, sizes_mb, iters, warmup,
        [&](std::size_t, at::Tensor& buffer) { mesh.all_reduce(round++, buffer, 60); },
        [&] { mesh.all_reduce(round++, one, 60); });
    write_line(to_parent, report.dump());
    read_line(from_parent);
  });
}

// The whole benchmark; main() catches what it throws, so that the shared-memory segments made
// here are removed by their owners' destructors on an error too.
int measure(int argc, char** argv) {
  CLI::App app{"troupe ring all-reduce between processes on loopback"};
  int64_t ranks = 2;
  std::vector<double> sizes_mb{1, 16, 128};
  int iters = 10, warmup = 2;
  double bucket_mb = 1;
  int64_t window = cluster_config{}.ring_window;  // what a job that does not say gets
  app.add_option("--window", window, "Buckets in flight at once (the job key cluster.ring_window)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--ranks", ranks)->check(CLI::Range(1, 64));
  app.add_option("--sizes-mb", sizes_mb)->check(CLI::Range(1e-6, 4096.0))->delimiter(',');
  app.add_option("--iters", iters)->check(CLI::Range(1, 10000));
  app.add_option("--warmup", warmup)->check(CLI::Range(0, 10000));
  app.add_option("--bucket-mb", bucket_mb)->check(CLI::PositiveNumber);
  bool tls = false;
  app.add_flag("--tls", tls, "Mutual TLS between the ranks (a CA made for this run)");
  std::string transport = "ring";
  app.add_option("--transport", transport,
                 "ring: CAF actors over loopback TCP; tcp: the socket ring, plain TCP between "
                 "ring neighbours (both between hosts); gloo: gloo's halving-doubling over a "
                 "full mesh (cluster.collective \"gloo\"); shm: a shared-memory segment (node "
                 "processes on one host)")
      ->check(CLI::IsMember({"ring", "shm", "tcp", "gloo"}));
  CLI11_PARSE(app, argc, argv);
  if (tls && (transport == "shm" || transport == "gloo")) {
    std::cerr << "allreduce_bench: --tls applies to --transport ring and tcp only\n";
    return 2;
  }
  const auto tls_dir = tls ? make_certificates(ranks) : std::string();
  // shm: the segments are made here, before the ranks exist, and removed when this exits.
  std::vector<std::unique_ptr<host_reduction>> made;
  std::vector<host_segment_spec> segments;
  host_segment_spec barrier_spec{new_segment_name(), ranks, 1, new_segment_nonce()};
  if (transport == "shm") {
    made.push_back(host_reduction::create(barrier_spec));
    for (double mb : sizes_mb) {
      segments.push_back({new_segment_name(), ranks, floats_in(mb), new_segment_nonce()});
      made.push_back(host_reduction::create(segments.back()));
    }
  }

  const auto secret = new_ring_secret();
  std::vector<pid_t> children;
  std::vector<int> from_child, to_child;
  for (int64_t r = 0; r < ranks; ++r) {
    int up[2], down[2];
    if (::pipe(up) != 0 || ::pipe(down) != 0)
      return 1;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(up[0]);
      ::close(down[1]);
      int code = 0;
      try {
        if (transport == "shm")
          shm_rank(r, segments, barrier_spec, sizes_mb, iters, warmup, up[1], down[0]);
        if (transport == "tcp")
          tcp_rank(r, ranks, secret, sizes_mb, iters, warmup, bucket_mb, window, tls_dir, up[1],
                   down[0]);
        if (transport == "gloo")
          gloo_rank(r, ranks, sizes_mb, iters, warmup, up[1], down[0]);
        run_rank(r, ranks, sizes_mb, iters, warmup, bucket_mb, window, tls_dir, up[1], down[0]);
      } catch (const std::exception& e) {
        std::cerr << "rank " << r << ": " << e.what() << "\n";
        code = 1;
      }
      std::fflush(nullptr);
      ::_exit(code);
    }
    ::close(up[1]);
    ::close(down[0]);
    children.push_back(pid);
    from_child.push_back(up[0]);
    to_child.push_back(down[1]);
  }
  std::string ports;
  for (auto fd : from_child)
    ports += read_line(fd) + " ";
  // One rank connects at a time: with two ranks, two connections crossing each other between
  // the same pair of processes can both end up closed by CAF 0.17's handshake, each side keeping
  // the one the other dropped (TLS handshakes widen that window enough to hit it often).
  // The socket ring's and gloo's ranks connect and accept at once: each waits for its peers.
  const bool at_once = transport == "tcp" || transport == "gloo";
  for (std::size_t r = 0; r < to_child.size(); ++r) {
    write_line(to_child[r], ports);
    if (!at_once)
      read_line(from_child[r]);
  }
  if (at_once)
    for (auto fd : from_child)
      read_line(fd);
  std::string report;
  for (std::size_t r = 0; r < from_child.size(); ++r) {
    const auto line = read_line(from_child[r]);
    if (r == 0)
      report = line;
  }
  for (auto fd : to_child)
    write_line(fd, "bye");
  int failed = 0;
  for (auto pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  if (!tls_dir.empty())
    std::filesystem::remove_all(tls_dir);
  if (failed > 0 || report.empty()) {
    std::cerr << "allreduce_bench: " << failed << " rank(s) failed\n";
    return 1;
  }
  std::cout << report << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return measure(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "allreduce_bench: " << e.what() << "\n";
    return 1;
  }
}
