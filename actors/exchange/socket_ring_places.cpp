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

const char* collective_name(node_collective collective) {
  return collective == node_collective::ring ? "socket ring" : "gloo mesh";
}

std::string ring_answer_problem(const ring_places& asked, const ring_places& answer) {
  const auto n = answer.ranks.size();
  // Gloo's parts: the node's ranks' after open, every member's after the later steps.
  const auto parts = answer.mesh.size();
  if (answer.ranks == asked.ranks &&
      (answer.ports.size() == n || (parts > 0 && (parts == n || parts == answer.members.size()))))
    return "";
  return fmt::format("answered with {} port(s) and {} rendezvous part(s) for ranks {}",
                     answer.ports.size(), answer.mesh.size(), fmt::join(asked.ranks, ", "));
}

void link_ring_places(std::vector<ring_places>& places, const std::vector<std::string>& hosts) {
  if (!places.empty() && !places.front().mesh.empty()) {  // gloo: every part to everyone
    std::map<int64_t, std::string> part;
    for (const auto& p : places)
      for (std::size_t k = 0; k < p.ranks.size() && k < p.mesh.size(); ++k)
        part[p.ranks[k]] = p.mesh[k];
    for (auto& p : places) {
      p.mesh.clear();
      for (auto r : p.members)
        p.mesh.push_back(part.at(r));
    }
    return;
  }
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

ring_places socket_ring_places::open(ring_places places, const std::string& host) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto epoch = places.epoch;
  if (epoch <= epoch_)
    throw std::invalid_argument("the socket ring of epoch " + std::to_string(epoch) +
                                " is not newer than that of epoch " + std::to_string(epoch_) +
                                ", opened here already");
  drop_locked();
  epoch_ = epoch;
  ranks_ = places.ranks;
  places.ports.clear();
  places.mesh.clear();
  if (collective_ == node_collective::gloo) {
    check(places);
    const auto size = static_cast<int64_t>(places.members.size());
    for (auto r : places.ranks)  // every rank's listeners first: connecting needs them all
      meshes_[r] = std::make_unique<gloo_mesh>(host, static_cast<int64_t>(position_of(places, r)),
                                               size, gloo_timeout_s_);
    for (auto r : places.ranks)
      places.mesh.push_back(meshes_[r]->address());
    return places;
  }
  for (auto r : places.ranks) {
    auto listener = std::make_unique<ring_listener>(host);
    places.ports.push_back(listener->port());
    listeners_[r] = std::move(listener);
  }
  return places;
}

void socket_ring_places::check(const ring_places& places) const {
  const auto n = places.ranks.size();
  const bool fits = collective_ == node_collective::gloo
                        ? places.mesh.empty() || places.mesh.size() == places.members.size()
                        : places.next_hosts.size() == n && places.next_ports.size() == n;
  if (places.epoch != epoch_ || places.ranks != ranks_ || !fits ||
      places.secret.size() != ring_hello{}.secret.size() || places.members.empty())
    throw std::invalid_argument("the " + std::string(collective_name(collective_)) +
                                "'s places do not fit the ranks opened here");
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
  if (collective_ == node_collective::gloo) {
    if (places.mesh.size() != places.members.size())
      throw std::invalid_argument("the gloo mesh's places lack the members' rendezvous");
    for (auto r : places.ranks)
      meshes_.at(r)->connect(places.mesh);
    return;
  }
  if (places.members.size() == 1)
    return;
  for (std::size_t i = 0; i < places.ranks.size(); ++i) {
    const auto r = places.ranks[i];
    outgoing_[r] = connect_to_successor(places.next_hosts[i], places.next_ports[i],
                                        hello_of(places, r), timeout_s);
  }
}

socket_ring_places::socket_ring_places(ssl_ctx_st* tls, node_collective collective,
                                       double gloo_timeout_s)
    : tls_(tls), collective_(collective), gloo_timeout_s_(gloo_timeout_s) {
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
  if (collective_ == node_collective::gloo)
    return join_mesh(places, timeout_s);
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
    auto ring =
        std::make_unique<socket_ring>(std::move(out), std::move(in), static_cast<int64_t>(position),
                                      static_cast<int64_t>(size), options);
    if (tls_ != nullptr)
      ring->secure(tls_);
    rings_[r] = std::move(ring);
  }
  listeners_.clear();  // nobody else may connect now
  outgoing_.clear();
  formed_ = true;
}

// Each of this node's ranks waits for its connections (gloo_mesh::join), in turn: they are made
// in the background meanwhile.
void socket_ring_places::join_mesh(const ring_places& places, double timeout_s) {
  if (places.mesh.size() != places.members.size())
    throw std::invalid_argument("the gloo mesh's places lack the members' rendezvous");
  for (auto r : places.ranks) {
    auto it = meshes_.find(r);
    if (it == meshes_.end())
      throw std::invalid_argument("rank " + std::to_string(r) + " is not connected yet");
    it->second->join(timeout_s);
  }
  for (auto r : places.ranks)
    rings_[r] = std::move(meshes_.at(r));
  meshes_.clear();
  formed_ = true;
}

std::unique_ptr<cross_process_sum> socket_ring_places::take(int64_t rank, int64_t epoch) {
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
  meshes_.clear();
  rings_.clear();
}

}  // namespace troupe
