// The ring all-reduce over plain TCP on 127.0.0.1: ranks in threads, each with its listener,
// its connection to the successor and the one from its predecessor. Sums against
// sum_in_order; strangers, wrong secrets and stale epochs kept out of the ring; garbage, a
// closed peer, a silent peer and an abort end a round with an error naming it.
#include "core/collective/ring_sockets.hpp"
#include "core/collective/socket_ring.hpp"
#include "core/errors.hpp"
#include "socket_ring_helpers.hpp"

#include <ATen/ATen.h>
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace troupe;
using namespace troupe::testing;

namespace {

// Every rank sums its buffer for `round`, each in its own thread; rethrows the first error.
void reduce_all(std::vector<std::unique_ptr<socket_ring>>& ring, std::vector<at::Tensor>& buffers,
                int64_t round, double timeout_s = 10) {
  std::vector<std::future<void>> running;
  for (std::size_t r = 0; r < ring.size(); ++r)
    running.push_back(std::async(std::launch::async,
                                 [&, r] { ring[r]->all_reduce(round, buffers[r], timeout_s); }));
  for (auto& f : running)
    f.get();
}

// A raw client connection to `port` (a stranger to the ring).
socket_fd raw_connect(uint16_t port) {
  socket_fd fd(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  return fd;
}

void write_all(int fd, const void* data, std::size_t n) {
  REQUIRE(::send(fd, data, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n));
}

}  // namespace

TEST_SUITE("socket_ring") {
  TEST_CASE("ranks sum their buffers over TCP, round after round, every size, bucket and window") {
    for (int64_t n : {1, 2, 3, 4}) {
      // One bucket in flight (cluster.ring_window's default) and several.
      for (auto [numel, window] :
           {std::pair<int64_t, int64_t>{1, 1}, {5, 2}, {1000, 1}, {70001, 1}, {70001, 2}}) {
        CAPTURE(n);
        CAPTURE(numel);
        CAPTURE(window);
        auto ring = make_ring(n, /*bucket_elements=*/4096, window);
        for (int64_t round = 0; round < 3; ++round) {
          std::vector<at::Tensor> buffers;
          auto want = at::zeros({numel});
          for (int64_t r = 0; r < n; ++r) {
            buffers.push_back(at::randn({numel}));
            want += buffers.back();
          }
          reduce_all(ring, buffers, round);
          for (const auto& b : buffers) {
            CHECK(at::allclose(b, want, 1e-5, 1e-5));
            CHECK(at::equal(b, buffers[0]));  // every rank holds the same bits
          }
        }
      }
    }
  }

  TEST_CASE("the listener keeps strangers, wrong secrets, stale epochs and silence out") {
    const auto secret = new_ring_secret();
    ring_listener listener(host);
    auto wrong_secret = new_ring_secret();
    std::vector<socket_fd> strangers;
    strangers.push_back(raw_connect(listener.port()));  // says nothing
    strangers.push_back(raw_connect(listener.port()));
    write_all(strangers.back().get(), "GET / HTTP/1.1\r\n\r\n", 18);
    auto impostor = std::async(std::launch::async, [&] {
      return connect_to_successor(host, listener.port(), hello_from(wrong_secret, 3, 0), 5);
    });
    auto stale = std::async(std::launch::async, [&] {
      return connect_to_successor(host, listener.port(), hello_from(secret, 2, 0), 5);
    });
    auto wrong_rank = std::async(std::launch::async, [&] {
      return connect_to_successor(host, listener.port(), hello_from(secret, 3, 5), 5);
    });
    impostor.get();
    stale.get();
    wrong_rank.get();
    auto real = std::async(std::launch::async, [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return connect_to_successor(host, listener.port(), hello_from(secret, 3, 0), 5);
    });
    auto accepted = listener.accept_from(hello_from(secret, 3, 0), 5);
    auto sent = real.get();
    // The accepted one is the real predecessor's: a byte it sends arrives here.
    write_all(sent.get(), "x", 1);
    char c = 0;
    while (::recv(accepted.get(), &c, 1, 0) < 0) {
    }
    CHECK(c == 'x');
  }

  TEST_CASE("no predecessor within the timeout, or an abort, ends the wait naming it") {
    ring_listener listener(host);
    const auto expected = hello_from(new_ring_secret(), 0, 1);
    CHECK_THROWS_WITH_AS(listener.accept_from(expected, 0.1),
                         doctest::Contains("the predecessor (rank 1) did not connect"),
                         ring_link_error);
    std::atomic<bool> abort{true};
    CHECK_THROWS_WITH_AS(listener.accept_from(expected, 10, &abort), doctest::Contains("aborted"),
                         ring_link_error);
    CHECK_THROWS_WITH_AS(connect_to_successor("no-such-host.invalid", 1, expected, 1),
                         doctest::Contains("cannot resolve"), ring_link_error);
    // A node's --listen may be a name. A machine without /etc/hosts resolves not even
    // "localhost": the message then says what to give instead.
    try {
      ring_listener named("localhost");
      CHECK(named.port() > 0);
    } catch (const ring_link_error& e) {
      CHECK(std::string(e.what()).find("give an address such as 127.0.0.1") != std::string::npos);
    }
    auto alone = make_ring(1, 16);
    CHECK_THROWS_AS(
        alone[0]->all_reduce(0, at::empty({4}, at::TensorOptions().device(at::kMeta)), 1),
        std::invalid_argument);  // host memory only
  }

  // Rank 1 of a two-rank ring whose other side is this test: what rank 1 does with the bytes
  // the test writes as its predecessor.
  struct half_ring {
    ring_listener listener{host};
    std::array<uint8_t, 32> secret = new_ring_secret();
    socket_fd to_ring;    // the test, as rank 0, writing to rank 1
    socket_fd from_ring;  // rank 1's connection to its successor (rank 0: the test)
    std::unique_ptr<socket_ring> rank1;

    explicit half_ring(int64_t bucket_elements) {
      ring_listener rank0(host);
      auto out = std::async(std::launch::async, [&] {
        return connect_to_successor(host, rank0.port(), hello_from(secret, 0, 1), 5);
      });
      to_ring = connect_to_successor(host, listener.port(), hello_from(secret, 0, 0), 5);
      auto in = listener.accept_from(hello_from(secret, 0, 0), 5);
      from_ring = rank0.accept_from(hello_from(secret, 0, 1), 5);
      rank1 = std::make_unique<socket_ring>(out.get(), std::move(in), 1, 2,
                                            ring_options{bucket_elements, 8});
    }
  };

  TEST_CASE("garbage, absurd sizes, a wrong round, a closed or silent peer end the round") {
    const auto header = [](int64_t magic, int64_t round, int64_t elements) {
      return std::array<int64_t, 5>{magic, round, 0, 0, elements};
    };
    const int64_t magic = 0x31464e4952505254;
    SUBCASE("not a header") {
      half_ring h(1024);
      write_all(h.to_ring.get(), "hello, is this the ring? it is not.......", 40);
      CHECK_THROWS_WITH_AS(h.rank1->all_reduce(0, at::ones({100}), 5),
                           doctest::Contains("not a chunk header"), protocol_error);
    }
    SUBCASE("more elements than a bucket") {
      half_ring h(1024);
      const auto bad = header(magic, 0, int64_t{1} << 60);
      write_all(h.to_ring.get(), bad.data(), sizeof(bad));
      CHECK_THROWS_WITH_AS(h.rank1->all_reduce(0, at::ones({100}), 5),
                           doctest::Contains("more than a chunk of a bucket holds"),
                           protocol_error);
    }
    SUBCASE("another round") {
      half_ring h(1024);
      const auto bad = header(magic, 4, 50);
      write_all(h.to_ring.get(), bad.data(), sizeof(bad));
      CHECK_THROWS_WITH_AS(h.rank1->all_reduce(0, at::ones({100}), 5),
                           doctest::Contains("a chunk of round 4 in round 0"), protocol_error);
    }
    SUBCASE("a chunk the plan does not expect") {
      half_ring h(1024);
      const auto bad = header(magic, 0, 7);  // rank 0's first chunk of 100 elements has 50
      write_all(h.to_ring.get(), bad.data(), sizeof(bad));
      const std::vector<float> elements(7, 1.0f);
      write_all(h.to_ring.get(), elements.data(), elements.size() * sizeof(float));
      CHECK_THROWS_AS(h.rank1->all_reduce(0, at::ones({100}), 5), protocol_error);
    }
    SUBCASE("the predecessor closes mid-chunk") {
      half_ring h(1024);
      const auto start = header(magic, 0, 50);
      write_all(h.to_ring.get(), start.data(), sizeof(start));
      write_all(h.to_ring.get(), "abc", 3);
      h.to_ring = socket_fd();
      CHECK_THROWS_WITH_AS(h.rank1->all_reduce(0, at::ones({100}), 5),
                           doctest::Contains("the predecessor (rank 0) closed the connection"),
                           ring_link_error);
    }
    SUBCASE("a silent predecessor, then a broken ring refuses another round") {
      half_ring h(1024);
      CHECK_THROWS_WITH_AS(h.rank1->all_reduce(0, at::ones({100}), 0.2),
                           doctest::Contains("made no progress for"), ring_link_error);
      CHECK_THROWS_AS(h.rank1->all_reduce(1, at::ones({100}), 0.2), std::logic_error);
    }
    SUBCASE("an abort raised from another thread") {
      half_ring h(1024);
      std::atomic<bool> abort{false};
      std::thread raiser([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        abort = true;
      });
      CHECK_THROWS_WITH_AS(h.rank1->all_reduce(0, at::ones({100}), 30, &abort),
                           doctest::Contains("aborted"), ring_link_error);
      raiser.join();
    }
  }
}
