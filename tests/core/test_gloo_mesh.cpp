// Gloo's halving-doubling as the sum among processes (core/collective/gloo_mesh): formed in the
// three steps the coordinator drives (each rank's rendezvous part, every part to every rank,
// the wait for the connections), here among threads on 127.0.0.1. Every rank ends each sum with
// the same bits, the sum of the inputs; a mesh that cannot form, a peer gone mid-sum and an
// interrupt end in ring_link_error within their bounds; parts that do not fit are refused; a
// stranger first on the listeners, sending garbage, fails the forming and nothing else.
#include "core/collective/gloo_mesh.hpp"
#include "core/collective/ring_sockets.hpp"
#include "socket_ring_helpers.hpp"

#include <ATen/ATen.h>
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace troupe;

using troupe::testing::host;

namespace {

using mesh_list = std::vector<std::unique_ptr<gloo_mesh>>;

// A formed mesh of `n` ranks, each sum or connection giving up after `timeout_s`.
mesh_list make_mesh(int64_t n, double timeout_s = 10) {
  mesh_list meshes;
  std::vector<std::string> parts;
  for (int64_t r = 0; r < n; ++r) {
    meshes.push_back(std::make_unique<gloo_mesh>(host, r, n, timeout_s));
    parts.push_back(meshes.back()->address());
  }
  for (auto& m : meshes)
    m->connect(parts);
  for (auto& m : meshes)
    m->join(10);
  return meshes;
}

// Every rank's sum of its own buffer, each on a thread of its own.
void sum_all(mesh_list& meshes, std::vector<at::Tensor>& buffers, int64_t round) {
  std::vector<std::future<void>> running;
  for (std::size_t r = 0; r < meshes.size(); ++r)
    running.push_back(
        std::async(std::launch::async, [&, r] { meshes[r]->all_reduce(round, buffers[r], 10); }));
  for (auto& f : running)
    f.get();
}

// The IPv4 listeners a rendezvous part names (length-prefixed gloo addresses, one per peer, a
// sockaddr at the front of each).
std::vector<sockaddr_in> listeners_in(const std::string& part) {
  std::vector<sockaddr_in> out;
  for (std::size_t at = 0; at + 4 <= part.size();) {
    uint32_t n = 0;
    std::memcpy(&n, part.data() + at, 4);
    at += 4;
    if (n >= sizeof(sockaddr_in)) {
      sockaddr_in addr{};
      std::memcpy(&addr, part.data() + at, sizeof addr);
      out.push_back(addr);
    }
    at += n;
  }
  return out;
}

}  // namespace

TEST_SUITE("gloo_mesh") {
  TEST_CASE("formed in three steps, every rank holds the same sum, round after round") {
    REQUIRE(gloo_built_in());
    for (int64_t n : {2, 3, 5}) {  // 3 and 5: not powers of two
      CAPTURE(n);
      auto meshes = make_mesh(n);
      for (int64_t round = 0; round < 3; ++round) {
        std::vector<at::Tensor> buffers;
        auto want = at::zeros({10'001});
        for (int64_t r = 0; r < n; ++r) {
          buffers.push_back(at::randn({10'001}));
          want += buffers.back();
        }
        sum_all(meshes, buffers, round);
        for (int64_t r = 0; r < n; ++r) {
          CHECK(at::equal(buffers[static_cast<std::size_t>(r)], buffers[0]));  // bit for bit
          CHECK(meshes[static_cast<std::size_t>(r)]->received() == round + 1);
        }
        CHECK(at::allclose(buffers[0], want, 1e-5, 1e-5));
      }
    }
  }

  TEST_CASE("one rank is a mesh of its own: the sum is the buffer") {
    gloo_mesh alone(host, 0, 1, 1);
    alone.connect({alone.address()});
    alone.join(1);
    auto x = at::arange(5, at::kFloat);
    alone.all_reduce(0, x, 1);
    CHECK(at::equal(x, at::arange(5, at::kFloat)));
  }

  TEST_CASE("a mesh whose other rank is gone ends in ring_link_error by its bound") {
    gloo_mesh lonely(host, 0, 2, 1);
    auto gone = std::make_unique<gloo_mesh>(host, 1, 2, 1);
    const std::vector<std::string> parts{lonely.address(), gone->address()};
    gone.reset();  // its listener with it: refused, or never connecting, by the ports' order
    lonely.connect(parts);
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_AS(lonely.join(0.5), ring_link_error);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  }

  TEST_CASE("a peer gone mid-run: the next sum fails with ring_link_error, not a hang") {
    auto meshes = make_mesh(2, 5);
    meshes[1].reset();  // its connections close
    auto x = at::ones({1000});
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_AS(meshes[0]->all_reduce(0, x, 5), ring_link_error);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
    CHECK_THROWS_AS(meshes[0]->all_reduce(1, x, 5), ring_link_error);  // broken for good
  }

  TEST_CASE("an interrupted rank closes its connections: the peer waiting on it fails at once") {
    auto meshes = make_mesh(2, 60);
    auto x = at::ones({1000});
    auto waiting = std::async(std::launch::async, [&] { meshes[1]->all_reduce(0, x, 60); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    meshes[0]->interrupt();  // rank 0 never starts its sum
    REQUIRE(waiting.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    CHECK_THROWS_AS(waiting.get(), ring_link_error);
  }

  TEST_CASE("what does not fit is refused") {
    CHECK_THROWS_AS(gloo_mesh(host, 2, 2, 1), std::invalid_argument);
    CHECK_THROWS_AS(gloo_mesh(host, -1, 2, 1), std::invalid_argument);
    gloo_mesh a(host, 0, 2, 1);
    CHECK_THROWS_AS(a.connect({a.address()}), std::invalid_argument);  // one part for two
    CHECK_THROWS_AS(a.connect({a.address(), std::string("\xff\xff\xff\x7f", 4)}),
                    std::invalid_argument);  // a part cut short
    CHECK_THROWS_AS(gloo_mesh("no-such-host.invalid", 0, 2, 1), ring_link_error);
  }

  TEST_CASE("sums of several sizes, in the same order on every rank; not of doubles") {
    auto meshes = make_mesh(3);
    for (int64_t size : {64, 1, 64, 100'000, 1}) {
      CAPTURE(size);
      std::vector<at::Tensor> buffers{at::full({size}, 1.0f), at::full({size}, 2.0f),
                                      at::full({size}, 4.0f)};
      sum_all(meshes, buffers, 0);
      for (const auto& b : buffers)
        CHECK(at::equal(b, at::full({size}, 7.0f)));
    }
    auto wrong_type = at::ones({64}, at::kDouble);
    CHECK_THROWS_AS(meshes[0]->all_reduce(1, wrong_type, 1), std::invalid_argument);
  }

  TEST_CASE("a stranger first on the listeners, sending garbage: the forming fails, nothing else") {
    // gloo's connections carry no secret: whoever connects first takes a rank's place. What
    // that may cost is the forming (the coordinator then sums over actors), not the process.
    for (char junk_byte : {'\0', '\x01', '\xff'}) {
      CAPTURE(static_cast<int>(junk_byte));
      gloo_mesh a(host, 0, 2, 3);
      gloo_mesh b(host, 1, 2, 3);
      const std::vector<std::string> parts{a.address(), b.address()};
      for (const auto& part : parts)
        for (auto addr : listeners_in(part)) {
          const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
          REQUIRE(fd >= 0);
          if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
            const std::string junk(4096, junk_byte);
            ::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          ::close(fd);
        }
      a.connect(parts);
      b.connect(parts);
      int failed = 0;
      for (auto* m : {&a, &b})
        try {
          m->join(5);
        } catch (const ring_link_error&) {
          ++failed;
        }
      CHECK(failed >= 1);
    }
  }
}
