#include "actors/exchange/socket_ring_places.hpp"

#include <openssl/ssl.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace troupe {
namespace {

ring_hello hello_of(const ring_places& places, int64_t sender) {
  ring_hello h;
  std::copy(places.secret.begin(), places.secret.end(), h.secret.begin());
  h.epoch = places.epoch;
  h.sender = sender;
  return h;
}

// Where `rank` stands in the ring.
std::size_t position_of(const ring_places& places, int64_t rank) {
  return static_cast<std::size_t>(std::find(places.members.begin(), places.members.end(), rank) -
                                  places.members.begin());
}

}  // namespace

std::string ring_secret_bytes() {
  const auto secret = new_ring_secret();
  return std::string(secret.begin(), secret.end());
}

std::vector<ring_places> plan_ring_places(int64_t epoch, const std::vector<int64_t>& members,
                                          const std::vector<std::size_t>& node_of_member,
                                          std::size_t nodes) {
  std::vector<ring_places> places(nodes);
  const auto secret = ring_secret_bytes();
  for (std::size_t k = 0; k < members.size(); ++k)
    places.at(node_of_member.at(k)).ranks.push_back(members[k]);
  for (auto& p : places) {
    std::sort(p.ranks.begin(), p.ranks.end());
    p.secret = secret;
    p.epoch = epoch;
    p.members = members;
  }
  return places;
}

std::string ring_answer_problem(const ring_places& asked, const ring_places& answer) {
  if (answer.ranks == asked.ranks && answer.ports.size() == answer.ranks.size())
    return "";
  return fmt::format("answered with {} port(s) for ranks {}", answer.ports.size(),
                     fmt::join(asked.ranks, ", "));
}

void link_ring_places(std::vector<ring_places>& places, const std::vector<std::string>& hosts) {
  std::map<int64_t, std::pair<std::string, uint16_t>> listener;
  for (std::size_t i = 0; i < places.size(); ++i)
    for (std::size_t k = 0; k < places[i].ranks.size(); ++k)
      listener[places[i].ranks[k]] = {hosts.at(i), places[i].ports.at(k)};
  for (auto& p : places) {
    p.next_hosts.clear();
    p.next_ports.clear();
    const auto n = p.members.size();
    for (auto r : p.ranks) {
      const auto& [host, port] = listener.at(p.members[(position_of(p, r) + 1) % n]);
      p.next_hosts.push_back(host);
      p.next_ports.push_back(port);
    }
  }
}

std::vector<uint16_t> socket_ring_places::open(int64_t epoch, const std::vector<int64_t>& ranks,
                                               const std::string& host) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (epoch <= epoch_)
    throw std::invalid_argument("the socket ring of epoch " + std::to_string(epoch) +
                                " is not newer than that of epoch " + std::to_string(epoch_) +
                                ", opened here already");
  drop_locked();
  epoch_ = epoch;
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
  if (places.epoch != epoch_ || places.ranks != ranks_ || places.next_hosts.size() != n ||
      places.next_ports.size() != n || places.secret.size() != ring_hello{}.secret.size() ||
      places.members.empty())
    throw std::invalid_argument("the socket ring's places do not fit the ranks opened here");
  const std::set<int64_t> members(places.members.begin(), places.members.end());
  if (members.size() != places.members.size() || *members.begin() < 0)
    throw std::invalid_argument("the socket ring's members repeat or are negative");
  for (auto r : places.ranks)
    if (members.count(r) == 0)
      throw std::invalid_argument("rank " + std::to_string(r) + " is not a member of the ring");
}

void socket_ring_places::connect(const ring_places& places, double timeout_s) {
  std::lock_guard<std::mutex> lock(mutex_);
  check(places);
  if (places.members.size() == 1)
    return;
  for (std::size_t i = 0; i < places.ranks.size(); ++i) {
    const auto r = places.ranks[i];
    outgoing_[r] = connect_to_successor(places.next_hosts[i], places.next_ports[i],
                                        hello_of(places, r), timeout_s);
  }
}

socket_ring_places::socket_ring_places(ssl_ctx_st* tls) : tls_(tls) {
  if (tls_ != nullptr)
    SSL_CTX_up_ref(tls_);
}

socket_ring_places::~socket_ring_places() {
  rings_.clear();  // the rings' sessions use the context
  SSL_CTX_free(tls_);
}

void socket_ring_places::join(const ring_places& places, const ring_options& options,
                              double timeout_s) {
  std::lock_guard<std::mutex> lock(mutex_);
  check(places);
  const auto size = places.members.size();
  for (auto r : places.ranks) {
    const auto position = position_of(places, r);
    socket_fd in;
    socket_fd out;
    if (size > 1) {
      if (outgoing_.count(r) == 0)
        throw std::invalid_argument("rank " + std::to_string(r) + " is not connected yet");
      const auto predecessor = places.members[(position + size - 1) % size];
      in = listeners_.at(r)->accept_from(hello_of(places, predecessor), timeout_s);
      out = std::move(outgoing_.at(r));
    }
    rings_[r] =
        std::make_unique<socket_ring>(std::move(out), std::move(in), static_cast<int64_t>(position),
                                      static_cast<int64_t>(size), options);
    if (tls_ != nullptr)
      rings_[r]->secure(tls_);
  }
  listeners_.clear();  // nobody else may connect now
  outgoing_.clear();
  formed_ = true;
}

std::unique_ptr<socket_ring> socket_ring_places::take(int64_t rank, int64_t epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (epoch != epoch_ || !formed_)
    return nullptr;
  auto it = rings_.find(rank);
  if (it == rings_.end())
    throw std::logic_error("rank " + std::to_string(rank) +
                           " has no place in this node's socket ring of epoch " +
                           std::to_string(epoch) + " (taken twice?)");
  auto ring = std::move(it->second);
  rings_.erase(it);
  return ring;
}

void socket_ring_places::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  drop_locked();
}

void socket_ring_places::drop_locked() {
  formed_ = false;
  ranks_.clear();
  listeners_.clear();
  outgoing_.clear();
  rings_.clear();
}

}  // namespace troupe
