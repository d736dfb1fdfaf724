// Rings of socket_ring ranks on 127.0.0.1 for tests, connected in threads.
#pragma once

#include "core/collective/ring_sockets.hpp"
#include "core/collective/socket_ring.hpp"

#include <future>
#include <memory>
#include <string>
#include <vector>

namespace troupe::testing {

inline const std::string host = "127.0.0.1";

inline ring_hello hello_from(const std::array<uint8_t, 32>& secret, int64_t epoch, int64_t sender) {
  ring_hello h;
  h.secret = secret;
  h.epoch = epoch;
  h.sender = sender;
  return h;
}

// A ring of `n` ranks, connected: each rank's listener accepts its predecessor while it
// connects to its successor.
inline std::vector<std::unique_ptr<socket_ring>> make_ring(int64_t n, int64_t bucket_elements,
                                                           int64_t window = 4) {
  const auto secret = new_ring_secret();
  std::vector<std::unique_ptr<ring_listener>> listeners;
  for (int64_t r = 0; r < n; ++r)
    listeners.push_back(std::make_unique<ring_listener>(host));
  std::vector<std::future<std::unique_ptr<socket_ring>>> made;
  for (int64_t r = 0; r < n; ++r)
    made.push_back(std::async(std::launch::async, [&, r] {
      const auto next = listeners[static_cast<std::size_t>((r + 1) % n)]->port();
      auto out = connect_to_successor(host, next, hello_from(secret, 7, r), 10);
      auto in = listeners[static_cast<std::size_t>(r)]->accept_from(
          hello_from(secret, 7, (r + n - 1) % n), 10);
      return std::make_unique<socket_ring>(std::move(out), std::move(in), r, n,
                                           ring_options{bucket_elements, window});
    }));
  std::vector<std::unique_ptr<socket_ring>> ring;
  for (auto& f : made)
    ring.push_back(f.get());
  return ring;
}

}  // namespace troupe::testing
