#include "core/policy/membership.hpp"

#include <algorithm>
#include <stdexcept>

namespace troupe {

membership::membership(std::vector<int64_t> node_of, std::vector<std::string> names,
                       int64_t min_nodes)
    : node_of_(std::move(node_of)),
      names_(std::move(names)),
      slots_(names_.size(), slot_state::live),
      min_nodes_(min_nodes) {
  for (auto n : node_of_)
    if (n < 0 || n >= static_cast<int64_t>(names_.size()))
      throw std::invalid_argument("membership: a rank on node " + std::to_string(n) + " of " +
                                  std::to_string(names_.size()));
  refresh_live();
}

membership membership::single_process(int64_t ranks) {
  std::vector<int64_t> node_of;
  for (int64_t r = 0; r < ranks; ++r)
    node_of.push_back(r);
  return membership(std::move(node_of), std::vector<std::string>(static_cast<std::size_t>(ranks)));
}

void membership::refresh_live() {
  live_.clear();
  for (std::size_t r = 0; r < node_of_.size(); ++r)
    if (slots_[static_cast<std::size_t>(node_of_[r])] == slot_state::live)
      live_.push_back(static_cast<int64_t>(r));
}

int64_t membership::position(int64_t rank) const {
  const auto it = std::lower_bound(live_.begin(), live_.end(), rank);
  return it != live_.end() && *it == rank ? static_cast<int64_t>(it - live_.begin()) : -1;
}

int64_t membership::successor(int64_t rank) const {
  const auto p = position(rank);
  if (p < 0)
    throw std::invalid_argument("membership: rank " + std::to_string(rank) + " is not live");
  return live_[static_cast<std::size_t>((p + 1) % static_cast<int64_t>(live_.size()))];
}

row_range membership::rows_of(int64_t rank, int64_t batch) const {
  const auto p = position(rank);
  if (p < 0)
    throw std::invalid_argument("membership: rank " + std::to_string(rank) + " is not live");
  return shard_of(batch, static_cast<int64_t>(live_.size()), p);
}

std::vector<int64_t> membership::ranks_of_node(int64_t node) const {
  std::vector<int64_t> ranks;
  for (std::size_t r = 0; r < node_of_.size(); ++r)
    if (node_of_[r] == node)
      ranks.push_back(static_cast<int64_t>(r));
  return ranks;
}

int64_t membership::live_nodes() const {
  return static_cast<int64_t>(std::count(slots_.begin(), slots_.end(), slot_state::live));
}

std::vector<std::string> membership::missing() const {
  std::vector<std::string> out;
  for (std::size_t n = 0; n < slots_.size(); ++n)
    if (slots_[n] != slot_state::live)
      out.push_back(names_[n]);
  return out;
}

bool membership::has_vacancy() const {
  return std::find(slots_.begin(), slots_.end(), slot_state::lost) != slots_.end();
}

std::vector<int64_t> membership::lose_node_of(int64_t rank) {
  const auto node = node_of(rank);
  auto& slot = slots_.at(static_cast<std::size_t>(node));
  if (slot == slot_state::lost)
    return {};
  const bool was_live = slot == slot_state::live;
  slot = slot_state::lost;
  lost_order_.push_back(node);
  if (!was_live)
    return {};  // a replacement lost before it joined: its ranks were never live
  ++epoch_;
  refresh_live();
  return ranks_of_node(node);
}

bool membership::is_joining(int64_t rank) const {
  return slots_.at(static_cast<std::size_t>(node_of(rank))) == slot_state::joining;
}

int64_t membership::admit(const std::string& name) {
  for (auto it = lost_order_.begin(); it != lost_order_.end(); ++it) {
    auto& slot = slots_[static_cast<std::size_t>(*it)];
    if (slot != slot_state::lost)
      continue;
    const auto node = *it;
    slot = slot_state::joining;
    names_[static_cast<std::size_t>(node)] = name;
    lost_order_.erase(it);
    return node;
  }
  return -1;
}

std::vector<int64_t> membership::activate() {
  std::vector<int64_t> joined;
  for (std::size_t n = 0; n < slots_.size(); ++n)
    if (slots_[n] == slot_state::joining) {
      slots_[n] = slot_state::live;
      for (auto r : ranks_of_node(static_cast<int64_t>(n)))
        joined.push_back(r);
    }
  if (joined.empty())
    return joined;
  std::sort(joined.begin(), joined.end());
  ++epoch_;
  refresh_live();
  return joined;
}

std::vector<int64_t> membership::activate_node(int64_t node) {
  auto& slot = slots_.at(static_cast<std::size_t>(node));
  if (slot != slot_state::joining)
    return {};
  slot = slot_state::live;
  ++epoch_;
  refresh_live();
  return ranks_of_node(node);
}

bool membership::has_joining() const {
  return std::find(slots_.begin(), slots_.end(), slot_state::joining) != slots_.end();
}

}  // namespace troupe
