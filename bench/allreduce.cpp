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
// publishes a ring member on 127.0.0.1 and connects to its successor's (allreduce_caf_ring.cpp).
// Shm: this process creates one segment per size (and one for the barrier), each
// rank opens them. Then, per size: a barrier (an all-reduce of one element), then one timed
// all-reduce; warm-up rounds first. Every rank checks the sum of the first round. Prints one
// JSON object: per size the median time of rank 0, the algorithm bandwidth bytes / time and the
// bus bandwidth 2(N - 1)/N x bytes / time (what each link carries, comparable across N), in
// GB/s (1e9 bytes).
#include "actors/links/tls_session.hpp"
#include "bench/allreduce_caf_ring.hpp"
#include "bench/allreduce_rank.hpp"
#include "core/collective/gloo_mesh.hpp"
#include "core/collective/host_reduction.hpp"
#include "core/collective/socket_ring.hpp"
#include "core/io/hex.hpp"
#include "core/job/job_config.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace troupe;
using namespace troupe::bench::allreduce;

namespace {

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
