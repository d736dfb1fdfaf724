#include "core/run/plan_wire.hpp"

#include "core/checkpoint/sha256.hpp"
#include "core/config/parse_job.hpp"
#include "core/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace troupe {
namespace {

using json = nlohmann::json;

template <class Enum, std::size_t N>
Enum enum_named(const std::string& name, const Enum (&values)[N], const char* field) {
  for (const auto v : values)
    if (name == to_string(v))
      return v;
  throw job_error({fmt::format("plan/{}: \"{}\" is not a value this troupe knows", field, name)});
}

json stages_to_json(const std::vector<stage_slice>& stages) {
  auto out = json::array();
  for (const auto& s : stages)
    out.push_back({s.begin, s.end, s.parameters, s.buffer_values});
  return out;
}

std::vector<stage_slice> stages_from_json(const json& in) {
  std::vector<stage_slice> stages;
  for (const auto& s : in)
    stages.push_back({s.at(0).get<int64_t>(), s.at(1).get<int64_t>(), s.at(2).get<int64_t>(),
                      s.at(3).get<int64_t>()});
  return stages;
}

json model_to_json(const model_facts& m) {
  auto layers = json::array();
  for (const auto& l : m.layers)
    layers.push_back({l.name, l.kind, l.parameters, l.buffer_values});
  return {{"parameters", m.parameters},
          {"buffer_values", m.buffer_values},
          {"layers", layers},
          {"parameter_layout", m.parameter_layout},
          {"random_ops", m.random_ops}};
}

model_facts model_from_json(const json& in) {
  model_facts m;
  m.parameters = in.at("parameters").get<int64_t>();
  m.buffer_values = in.at("buffer_values").get<int64_t>();
  for (const auto& l : in.at("layers"))
    m.layers.push_back({l.at(0).get<std::string>(), l.at(1).get<std::string>(),
                        l.at(2).get<int64_t>(), l.at(3).get<int64_t>()});
  in.at("parameter_layout").get_to(m.parameter_layout);
  in.at("random_ops").get_to(m.random_ops);
  return m;
}

json data_to_json(const data_facts& d) {
  return {{"train_rows", d.train_rows},     {"validation_rows", d.validation_rows},
          {"test_rows", d.test_rows},       {"classes", d.classes},
          {"row_shape", d.row_shape},       {"class_labels", d.class_labels},
          {"target_shape", d.target_shape}, {"skipped_rows", d.skipped_rows}};
}

data_facts data_from_json(const json& in) {
  data_facts d;
  d.train_rows = in.at("train_rows").get<int64_t>();
  d.validation_rows = in.at("validation_rows").get<int64_t>();
  d.test_rows = in.at("test_rows").get<int64_t>();
  d.classes = in.at("classes").get<int64_t>();
  in.at("row_shape").get_to(d.row_shape);
  d.class_labels = in.at("class_labels").get<bool>();
  in.at("target_shape").get_to(d.target_shape);
  d.skipped_rows = in.at("skipped_rows").get<int64_t>();
  return d;
}

json devices_to_json(const device_plan& devices) {
  auto workers = json::array();
  for (const auto& d : devices.workers)
    workers.push_back(d.str());
  return {{"workers", workers}, {"gpu_each", devices.gpu_each}};
}

device_plan devices_from_json(const json& in) {
  device_plan devices;
  for (const auto& name : in.at("workers")) {
    const auto d = parse_device(name.get<std::string>());
    if (!d)
      throw job_error({"plan/devices: \"" + name.get<std::string>() + "\" is not a device"});
    devices.workers.push_back(*d);
  }
  devices.gpu_each = in.at("gpu_each").get<bool>();
  return devices;
}

// What every process indexes by without checking again: one device per worker, one row count
// per replica adding up to the batch, the mode the job's keys make, rules and rings that run.
void check_consistent(const run_plan& p) {
  const auto& par = p.job.parallelism;
  const auto problem = [](const std::string& what) { throw job_error({"plan/" + what}); };
  const bool ensemble = p.mode == run_mode::ensemble;
  if (ensemble != p.job.ensemble.enabled() ||
      (!ensemble && (p.mode == run_mode::pipeline) != par.pipelined()))
    problem(fmt::format("mode: \"{}\" is not the mode of the job it holds", to_string(p.mode)));
  if (p.workers != (ensemble ? 1 : par.replicas * par.stages))
    problem(fmt::format("workers: {} for {} replica(s) of {} stage(s)", p.workers, par.replicas,
                        par.stages));
  if (static_cast<int64_t>(p.devices.workers.size()) != p.workers)
    problem(fmt::format("devices: {} for {} worker(s)", p.devices.workers.size(), p.workers));
  const auto& rows = p.rows_per_replica;
  if (static_cast<int64_t>(rows.size()) != par.replicas ||
      std::any_of(rows.begin(), rows.end(), [](int64_t r) { return r < 0; }) ||
      std::accumulate(rows.begin(), rows.end(), int64_t{0}) != p.job.training.batch_size)
    problem(fmt::format("rows_per_replica: not {} replicas' shares of a batch of {}", par.replicas,
                        p.job.training.batch_size));
  if (p.rules.total_steps() < 1 || p.rules.steps_per_epoch() < 1 || p.rules.eval_interval() < 0)
    problem("rules: a run needs at least one step and one step per epoch");
  if (p.ring.bucket_elements < 1 || p.ring.window < 1)
    problem("ring: buckets and the window need at least 1");
}

run_plan decode(const json& in) {
  run_plan p;
  p.job = parse_job(in.at("job"));
  p.data = data_from_json(in.at("data"));
  p.job.model.input_shape = p.data.row_shape;  // as make_run_plan sets it; no job key holds it
  p.model = model_from_json(in.at("model"));
  p.mode = enum_named(in.at("mode").get<std::string>(),
                      {run_mode::replicas, run_mode::pipeline, run_mode::ensemble}, "mode");
  const auto& rules = in.at("rules");
  p.rules = step_rules(rules.at(0).get<int64_t>(), rules.at(1).get<int64_t>(),
                       rules.at(2).get<int64_t>());
  p.workers = in.at("workers").get<int64_t>();
  in.at("rows_per_replica").get_to(p.rows_per_replica);
  p.devices = devices_from_json(in.at("devices"));
  p.gradients =
      enum_named(in.at("gradients").get<std::string>(),
                 {gradient_meeting::local, gradient_meeting::driver, gradient_meeting::ring,
                  gradient_meeting::nccl, gradient_meeting::shared},
                 "gradients");
  p.ring.bucket_elements = in.at("ring").at(0).get<int64_t>();
  p.ring.window = in.at("ring").at(1).get<int64_t>();
  p.stages = stages_from_json(in.at("stages"));
  in.at("micro_batch_rows").get_to(p.micro_batch_rows);
  in.at("boundary_floats_per_row").get_to(p.boundary_floats_per_row);
  p.predicted_bubble = in.at("predicted_bubble").get<double>();
  p.bytes_sent_per_step = in.at("bytes_sent_per_step").get<int64_t>();
  p.bytes_received_per_step = in.at("bytes_received_per_step").get<int64_t>();
  p.threads_total = in.at("threads_total").get<int64_t>();
  p.hardware_threads = in.at("hardware_threads").get<unsigned>();
  p.threads_chosen = in.at("threads_chosen").get<bool>();
  check_consistent(p);
  p.schedule = policy_schedule(p.job.parallelism, p.rules);  // on rules known to be sound
  return p;
}

}  // namespace

json plan_to_json(const run_plan& p) {
  return {{"job", json(to_json(p.job))},
          {"data", data_to_json(p.data)},
          {"model", model_to_json(p.model)},
          {"mode", to_string(p.mode)},
          {"rules", {p.rules.total_steps(), p.rules.steps_per_epoch(), p.rules.eval_interval()}},
          {"workers", p.workers},
          {"rows_per_replica", p.rows_per_replica},
          {"devices", devices_to_json(p.devices)},
          {"gradients", to_string(p.gradients)},
          {"ring", {p.ring.bucket_elements, p.ring.window}},
          {"stages", stages_to_json(p.stages)},
          {"micro_batch_rows", p.micro_batch_rows},
          {"boundary_floats_per_row", p.boundary_floats_per_row},
          {"predicted_bubble", p.predicted_bubble},
          {"bytes_sent_per_step", p.bytes_sent_per_step},
          {"bytes_received_per_step", p.bytes_received_per_step},
          {"threads_total", p.threads_total},
          {"hardware_threads", p.hardware_threads},
          {"threads_chosen", p.threads_chosen}};
}

run_plan plan_from_json(const json& in) {
  try {
    return decode(in);
  } catch (const json::exception& e) {
    // nlohmann's messages name the key or the type that was wrong ("key 'rules' not found").
    throw job_error({std::string("plan: not a plan this troupe can read (") + e.what() + ")"});
  }
}

std::string plan_digest(const run_plan& plan) {
  return sha256_hex(plan_to_json(plan).dump());
}

}  // namespace troupe
