#include "actors/socket_ring_places.hpp"

#include <stdexcept>

namespace troupe {
namespace {

ring_hello hello_of(const ring_places& places, int64_t sender) {
  ring_hello h;
  std::copy(places.secret.begin(), places.secret.end(), h.secret.begin());
  h.sender = sender;
  return h;
}

}  // namespace

std::string ring_secret_bytes() {
  const auto secret = new_ring_secret();
  return std::string(secret.begin(), secret.end());
}

std::vector<uint16_t> socket_ring_places::open(const std::vector<int64_t>& ranks,
                                               const std::string& host) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!ranks_.empty())
    throw std::invalid_argument("the socket ring's places are open already");
  std::vector<uint16_t> ports;
  for (auto r : ranks) {
    auto listener = std::make_unique<ring_listener>(host);
    ports.push_back(listener->port());
    listeners_[r] = std::move(listener);
  }
  ranks_ = ranks;
  return ports;
}

void socket_ring_places::check(const ring_places& places) const {
  const auto n = places.ranks.size();
  if (places.ranks != ranks_ || places.next_hosts.size() != n || places.next_ports.size() != n ||
      places.secret.size() != ring_hello{}.secret.size() || places.size < 1)
    throw std::invalid_argument("the socket ring's places do not fit the ranks opened here");
  for (auto r : places.ranks)
    if (r < 0 || r >= places.size)
      throw std::invalid_argument("rank " + std::to_string(r) + " is outside a ring of " +
                                  std::to_string(places.size));
}

void socket_ring_places::connect(const ring_places& places, double timeout_s) {
  std::lock_guard<std::mutex> lock(mutex_);
  check(places);
  if (places.size == 1)
    return;
  for (std::size_t i = 0; i < places.ranks.size(); ++i) {
    const auto r = places.ranks[i];
    outgoing_[r] = connect_to_successor(places.next_hosts[i], places.next_ports[i],
                                        hello_of(places, r), timeout_s);
  }
}

void socket_ring_places::join(const ring_places& places, int64_t bucket_elements,
                              double timeout_s) {
  std::lock_guard<std::mutex> lock(mutex_);
  check(places);
  for (auto r : places.ranks) {
    socket_fd in;
    socket_fd out;
    if (places.size > 1) {
      if (outgoing_.count(r) == 0)
        throw std::invalid_argument("rank " + std::to_string(r) + " is not connected yet");
      in = listeners_.at(r)->accept_from(hello_of(places, (r + places.size - 1) % places.size),
                                         timeout_s);
      out = std::move(outgoing_.at(r));
    }
    rings_[r] = std::make_unique<socket_ring>(std::move(out), std::move(in), r, places.size,
                                              bucket_elements);
  }
  listeners_.clear();  // nobody else may connect now
  outgoing_.clear();
}

std::unique_ptr<socket_ring> socket_ring_places::take(int64_t rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = rings_.find(rank);
  if (it == rings_.end())
    return nullptr;
  auto ring = std::move(it->second);
  rings_.erase(it);
  return ring;
}

}  // namespace troupe
