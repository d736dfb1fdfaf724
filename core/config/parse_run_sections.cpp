#include "core/config/parse_run_sections.hpp"

#include "core/job/device_spec.hpp"

#include <cmath>
#include <cstdint>

namespace troupe {

void read_ensemble(object_reader r, ensemble_config& e) {
  if (!r.has("members") && (r.has("lrs") || r.has("distinct_data_order")))
    r.object_problem("needs members");
  const bool members_ok = r.integer("members", e.members, 1, 4096);
  if (members_ok && e.members > 0) {
    r.number_array("lrs", e.lrs, 0, true, HUGE_VAL, static_cast<std::size_t>(e.members));
  } else {
    r.skip("lrs");
  }
  r.boolean("distinct_data_order", e.distinct_data_order);
  r.finish({"members", "lrs", "distinct_data_order"});
}

void read_cluster(object_reader r, cluster_config& c) {
  const bool nodes_ok = r.integer("nodes", c.nodes, 1, 1024);
  r.number("join_timeout_s", c.join_timeout_s, 0, true, 24 * 3600, false);
  r.number("node_timeout_s", c.node_timeout_s, 0.1, false, 3600, false);
  r.number("bucket_mb", c.bucket_mb, 0, true, 1024, false);
  r.integer("ring_window", c.ring_window, 1, 1024);
  r.number("step_timeout_s", c.step_timeout_s, 0, false, 7 * 24 * 3600, false);
  r.boolean("shared_memory", c.shared_memory);
  // What a lost node does, and how nodes sum, only concern runs with nodes: in one process
  // nothing is lost, and the replicas sum in memory.
  for (const char* key : {"on_node_loss", "min_nodes", "replacement_timeout_s", "collective"})
    if (r.has(key) && c.nodes == 0 && nodes_ok)
      r.problem(key, std::string(key) == "collective"
                         ? "needs cluster.nodes (only nodes in several processes sum through a "
                           "collective)"
                         : "needs cluster.nodes (only a run across processes can lose a node)");
  if (r.has("on_node_loss")) {
    if (const auto i = r.choice("on_node_loss", {"fail", "continue"}))
      c.on_node_loss = *i == 0 ? node_loss_policy::fail : node_loss_policy::carry_on;
  }
  if (r.integer("min_nodes", c.min_nodes, 1, 1024) && c.nodes > 0 && c.min_nodes > c.nodes)
    r.problem("min_nodes", "must be at most cluster.nodes (" + std::to_string(c.nodes) + "), got " +
                               std::to_string(c.min_nodes));
  r.number("replacement_timeout_s", c.replacement_timeout_s, 0, true, 7 * 24 * 3600, false);
  if (r.has("collective")) {
    if (const auto i = r.choice("collective", {"ring", "gloo"}))
      c.collective = *i == 0 ? node_collective::ring : node_collective::gloo;
  }
  r.finish({"nodes", "join_timeout_s", "node_timeout_s", "bucket_mb", "ring_window",
            "step_timeout_s", "on_node_loss", "min_nodes", "replacement_timeout_s", "shared_memory",
            "collective"});
}

void read_checkpoint(object_reader r, checkpoint_config& c) {
  r.integer("every_steps", c.every_steps, 0, INT64_C(1) << 40);
  r.number("every_s", c.every_s, 0, false, 365 * 24 * 3600, false);
  r.integer("keep", c.keep, 1, 1000000);
  r.finish({"every_steps", "every_s", "keep"});
}

void read_device(object_reader& top, std::vector<device_spec>& device) {
  std::vector<std::string> texts;
  if (!top.string_or_strings("device", texts, is_device_name, device_expected, 4096) ||
      texts.empty())
    return;
  device.clear();
  for (const auto& t : texts)
    device.push_back(*parse_device(t));
}

void read_faults(object_reader r, faults_config& f) {
  r.optional_integer("throw_worker", f.throw_worker, 0, INT64_MAX);
  r.integer("throw_step", f.throw_step, 0, INT64_MAX);
  r.optional_integer("slow_worker", f.slow_worker, 0, INT64_MAX);
  r.integer("slow_ms", f.slow_ms, 0, 3600 * 1000);
  r.boolean("refuse_socket_ring", f.refuse_socket_ring);
  r.boolean("refuse_ring_reform", f.refuse_ring_reform);
  r.boolean("stuck_exit", f.stuck_exit);
  r.finish({"throw_worker", "throw_step", "slow_worker", "slow_ms", "refuse_socket_ring",
            "refuse_ring_reform", "stuck_exit"});
}

}  // namespace troupe
