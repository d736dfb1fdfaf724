#include "core/cluster/slurm_env.hpp"

#include <cctype>
#include <stdexcept>

namespace troupe {
namespace {

bool is_count(const std::string& s) {
  if (s.empty() || s.size() > 9)
    return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  return true;
}

std::string value_of(const env_lookup& env, const char* name) {
  const char* v = env(name);
  return v != nullptr ? std::string(v) : std::string();
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument("SLURM_JOB_NODELIST \"" + nodelist + "\": " + why);
  };
  // The first entry ends at the first comma outside brackets.
  std::size_t end = 0;
  for (int depth = 0; end < nodelist.size(); ++end) {
    if (nodelist[end] == '[')
      ++depth;
    else if (nodelist[end] == ']')
      --depth;
    else if (nodelist[end] == ',' && depth == 0)
      break;
    if (depth < 0 || depth > 1)
      throw bad("unbalanced brackets");
  }
  const auto entry = nodelist.substr(0, end);
  if (entry.empty())
    throw bad("no host");
  const auto open = entry.find('[');
  if (open == std::string::npos)
    return entry;
  const auto close = entry.find(']', open);
  if (close == std::string::npos)
    throw bad("a bracket does not close");
  // "07-09,12" -> "07": the first number of the first range, as written.
  const auto ranges = entry.substr(open + 1, close - open - 1);
  const auto first = ranges.substr(0, ranges.find_first_of("-,"));
  if (first.empty() || !is_count(first))
    throw bad("the range \"[" + ranges + "]\" does not start with a number");
  return entry.substr(0, open) + first + entry.substr(close + 1);
}

slurm_node_defaults slurm_node_defaults_of(const env_lookup& env) {
  slurm_node_defaults d;
  const auto nodelist = value_of(env, "SLURM_JOB_NODELIST");
  d.join = value_of(env, "TROUPE_JOIN");
  if (d.join.empty() && !nodelist.empty()) {
    const auto port = value_of(env, "TROUPE_PORT");
    if (port.empty())
      throw std::invalid_argument(
          "inside a Slurm job (SLURM_JOB_NODELIST is set) without --join or TROUPE_JOIN, the "
          "coordinator's port comes from TROUPE_PORT, which is not set");
    d.join = first_slurm_host(nodelist) + ":" + port;
  }
  const auto procid = value_of(env, "SLURM_PROCID");
  const auto node_name = value_of(env, "SLURMD_NODENAME");
  if (!procid.empty() && !node_name.empty()) {
    if (!is_count(procid))
      throw std::invalid_argument("SLURM_PROCID \"" + procid + "\" is not a task number");
    d.name = node_name + "-task" + procid;
    d.listen = node_name;
  }
  if (const auto cpus = value_of(env, "SLURM_CPUS_PER_TASK"); !cpus.empty()) {
    if (!is_count(cpus) || std::stoll(cpus) == 0)
      throw std::invalid_argument("SLURM_CPUS_PER_TASK \"" + cpus + "\" is not a count of CPUs");
    // --threads's bound, which the environment went around.
    if (std::stoll(cpus) > max_node_threads)
      throw std::invalid_argument("SLURM_CPUS_PER_TASK \"" + cpus + "\": a node offers at most " +
                                  std::to_string(max_node_threads) + " threads");
    d.threads = std::stoll(cpus);
  }
  return d;
}

}  // namespace troupe
