// A replica's socket ring on a thread of its own (actors/exchange/ring_runner): sums reported
// through the callback, round after round; a broken ring reported with its cause; a runner
// destroyed while its sum waits returns at once and reports nothing. A node's places in the ring
// (actors/exchange/socket_ring_places): formed in three steps, each rank's ring taken once, places
// that do not fit refused.
#include "actors/exchange/ring_runner.hpp"
#include "actors/exchange/socket_ring_places.hpp"

#include "../core/socket_ring_helpers.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <vector>

using namespace troupe;
using namespace troupe::testing;

namespace {

// What a runner reported, for the test thread to wait on.
struct reports {
  std::mutex mutex;
  std::vector<std::promise<std::string>> by_round = std::vector<std::promise<std::string>>(8);
  int calls = 0;

  ring_runner::done_function callback() {
    return [this](int64_t round, const std::string& error) {
      std::lock_guard<std::mutex> lock(mutex);
      ++calls;
      by_round.at(static_cast<std::size_t>(round)).set_value(error);
    };
  }
  std::string wait(int64_t round) {
    auto f = by_round.at(static_cast<std::size_t>(round)).get_future();
    REQUIRE(f.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    return f.get();
  }
};

}  // namespace

TEST_SUITE("ring_runner") {
  TEST_CASE("two replicas' sums run beside their threads and are reported, round by round") {
    auto ring = make_ring(2, 1000);
    reports a, b;
    ring_runner first(std::move(ring[0]), 10, a.callback());
    ring_runner second(std::move(ring[1]), 10, b.callback());
    for (int64_t round = 0; round < 3; ++round) {
      auto x = at::randn({2500});
      auto y = at::randn({2500});
      const auto want = x + y;
      first.start(round, x);
      CHECK(first.busy());
      CHECK_THROWS_AS(first.start(round + 1, x), std::logic_error);  // one sum at a time
      second.start(round, y);
      CHECK(a.wait(round).empty());
      CHECK(b.wait(round).empty());
      CHECK(at::allclose(x, want));
      CHECK(at::equal(x, y));
      CHECK_FALSE(first.busy());
    }
  }

  TEST_CASE("a ring whose neighbour went away is reported with the cause") {
    auto ring = make_ring(2, 1000);
    reports a;
    ring_runner runner(std::move(ring[0]), 10, a.callback());
    ring[1].reset();  // its connections close
    runner.start(0, at::ones({100}));
    CHECK(a.wait(0).find("closed the connection") != std::string::npos);
  }

  TEST_CASE("a runner destroyed while its sum waits stops at once and reports nothing") {
    auto ring = make_ring(2, 1000);
    reports a;
    const auto start = std::chrono::steady_clock::now();
    {
      ring_runner runner(std::move(ring[0]), 60, a.callback());
      runner.start(0, at::ones({100}));  // the other rank never starts: the sum waits
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    std::lock_guard<std::mutex> lock(a.mutex);
    CHECK(a.calls == 0);
  }

  TEST_CASE("a node's places: listen, connect, join, then each rank takes its ring once") {
    socket_ring_places node;  // both ranks of a two-rank ring on one node
    auto places = plan_ring_places(0, {0, 1}, {0, 0}, 1).front();
    CHECK(places.ranks == std::vector<int64_t>{0, 1});
    places = node.open(places, host);
    CHECK_THROWS_AS(node.open(places, host), std::invalid_argument);  // once an epoch
    std::vector<ring_places> all{places};
    link_ring_places(all, {host});
    places = all.front();
    CHECK(places.next_ports == std::vector<uint16_t>{places.ports[1], places.ports[0]});
    SUBCASE("formed") {
      node.connect(places, 5);
      node.join(places, ring_options{1000, 1}, 5);
      CHECK_FALSE(node.take(0, 1));  // another epoch's
      auto first = node.take(0, 0);
      auto second = node.take(1, 0);
      REQUIRE(first);
      REQUIRE(second);
      CHECK_THROWS_AS(node.take(0, 0), std::logic_error);  // once
      CHECK_THROWS_AS(node.take(5, 0), std::logic_error);  // not a member
      auto x = at::ones({10});
      auto y = at::ones({10});
      auto other = std::async(std::launch::async, [&] { second->all_reduce(0, y, 5); });
      first->all_reduce(0, x, 5);
      other.get();
      CHECK(at::equal(x, at::full({10}, 2.0f)));
    }
    SUBCASE("places that do not fit") {
      auto bad = places;
      bad.secret = "short";
      CHECK_THROWS_AS(node.connect(bad, 1), std::invalid_argument);
      bad = places;
      bad.ranks = {0, 2};
      CHECK_THROWS_AS(node.connect(bad, 1), std::invalid_argument);
      bad = places;
      bad.next_ports.pop_back();
      CHECK_THROWS_AS(node.connect(bad, 1), std::invalid_argument);
      bad = places;
      bad.epoch = 1;
      CHECK_THROWS_AS(node.connect(bad, 1), std::invalid_argument);
      bad = places;
      bad.members = {0, 1, 1};
      CHECK_THROWS_AS(node.connect(bad, 1), std::invalid_argument);
      bad = places;
      bad.members = {1, 2};
      CHECK_THROWS_AS(node.connect(bad, 1), std::invalid_argument);
      CHECK_THROWS_AS(node.join(places, ring_options{1000, 1}, 1),
                      std::invalid_argument);  // not connected
    }
  }

  TEST_CASE("a node's places formed again for a later epoch, among other members") {
    // Ranks 0 and 2 of a ring whose rank 1 was lost: a two-member ring in epoch 3.
    socket_ring_places node;
    auto places = plan_ring_places(0, {0, 1, 2}, {0, 1, 0}, 2);
    places[0] = node.open(places[0], host);  // epoch 0, never joined
    places = plan_ring_places(3, {0, 2}, {0, 0}, 1);
    auto stale = places[0];
    places[0] = node.open(places[0], host);
    stale.epoch = 2;
    CHECK_THROWS_AS(node.open(stale, host), std::invalid_argument);
    link_ring_places(places, {host});
    node.connect(places[0], 5);
    node.join(places[0], ring_options{1000, 1}, 5);
    CHECK_FALSE(node.take(0, 0));
    auto first = node.take(0, 3);
    auto second = node.take(2, 3);
    REQUIRE(first);
    REQUIRE(second);
    auto x = at::full({7}, 1.0f);
    auto y = at::full({7}, 2.0f);
    auto other = std::async(std::launch::async, [&] { second->all_reduce(0, y, 5); });
    first->all_reduce(0, x, 5);
    other.get();
    CHECK(at::equal(x, at::full({7}, 3.0f)));
    CHECK(at::equal(y, x));
    node.clear();
    CHECK_FALSE(node.take(0, 3));
  }
}
