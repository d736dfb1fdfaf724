#include "core/metrics/record_reader.hpp"

#include <cmath>
#include <functional>
#include <map>
#include <string>

namespace troupe::records {
namespace {

// Reads the fields of one record, remembering whether any had the wrong type.
class fields {
 public:
  explicit fields(const nlohmann::json& j) : j_(j) {}

  fields& integer(const char* key, int64_t& out) {
    const auto* v = find(key);
    if (!v)
      return *this;
    if (v->is_number_integer()) {
      out = v->get<int64_t>();
    } else if (v->is_number_float() && std::isfinite(v->get<double>()) &&
               std::abs(v->get<double>()) < 9e18) {
      out = static_cast<int64_t>(v->get<double>());
    } else {
      ok_ = false;
    }
    return *this;
  }
  fields& number(const char* key, double& out) {
    const auto* v = find(key);
    if (v && v->is_number())
      out = v->get<double>();
    else if (v)
      ok_ = false;
    return *this;
  }
  fields& text(const char* key, std::string& out) {
    const auto* v = find(key);
    if (v && v->is_string())
      out = v->get<std::string>();
    else if (v)
      ok_ = false;
    return *this;
  }
  fields& integers(const char* key, std::vector<int64_t>& out) {
    const auto* v = find(key);
    if (!v)
      return *this;
    if (!v->is_array()) {
      ok_ = false;
      return *this;
    }
    out.clear();
    for (const auto& e : *v)
      if (e.is_number_integer())
        out.push_back(e.get<int64_t>());
      else
        ok_ = false;
    return *this;
  }
  bool has(const std::string& key) const { return j_.contains(key); }

  template <class R>
  std::optional<any_record> done(R r) const {
    return ok_ ? std::optional<any_record>(std::move(r)) : std::nullopt;
  }

 private:
  const nlohmann::json* find(const char* key) const {
    const auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }

  const nlohmann::json& j_;
  bool ok_ = true;
};

// eval and member_eval name their figures by split and metric: "validation_loss",
// "test_accuracy", "test_mse" (records::eval); a member's metric is accuracy.
template <class R>
void split_figures(fields& f, R& r, std::string& metric) {
  r.split = "test";
  for (const char* key :
       {"validation_loss", "validation_accuracy", "validation_mse", "validation_mae"})
    if (f.has(key))
      r.split = "validation";
  f.number((r.split + "_loss").c_str(), r.loss);
  for (const char* m : {"accuracy", "mse", "mae"})
    if (f.has(r.split + "_" + m)) {
      metric = m;
      f.number((r.split + "_" + m).c_str(), r.accuracy);
    }
}

using parser = std::function<std::optional<any_record>(fields&)>;

// The records of steps and evaluations.
void add_training_parsers(std::map<std::string, parser>& table) {
  table.insert({
      {step::event,
       [](fields& f) {
         step r;
         f.integer("step", r.step).integer("epoch", r.epoch).number("loss", r.loss);
         f.integer("samples", r.samples).number("samples_per_s", r.samples_per_s);
         f.number("step_s", r.step_s).number("reduce_s", r.reduce_s).number("t", r.t);
         f.number("lr", r.lr);
         return f.done(r);
       }},
      {worker_step::event,
       [](fields& f) {
         worker_step r;
         f.integer("step", r.step).integer("worker", r.worker).number("compute_s", r.compute_s);
         f.number("comm_s", r.comm_s).number("apply_s", r.apply_s);
         f.number("data_wait_s", r.data_wait_s);
         return f.done(r);
       }},
      {stage_step::event,
       [](fields& f) {
         stage_step r;
         f.integer("step", r.step).integer("worker", r.worker).integer("pipeline", r.pipeline);
         f.integer("stage", r.stage).number("busy_s", r.busy_s).number("idle_s", r.idle_s);
         f.integer("peak_live_activations", r.peak_live_activations);
         return f.done(r);
       }},
      {eval::event,
       [](fields& f) {
         eval r;
         f.integer("step", r.step).integer("epoch", r.epoch).integer("samples", r.samples);
         f.number("eval_s", r.eval_s).number("t", r.t).text("weights", r.weights);
         split_figures(f, r, r.metric);
         return f.done(r);
       }},
      {member_eval::event,
       [](fields& f) {
         member_eval r;
         f.integer("step", r.step).integer("member", r.member).number("t", r.t);
         std::string metric;
         split_figures(f, r, metric);
         return f.done(r);
       }},
      {applied::event,
       [](fields& f) {
         applied r;
         f.integer("worker", r.worker).integer("clock", r.clock).integer("version", r.version);
         f.integer("staleness", r.staleness);
         return f.done(r);
       }},
      {waited::event,
       [](fields& f) {
         waited r;
         f.integer("worker", r.worker).integer("clock", r.clock).number("wait_s", r.wait_s);
         return f.done(r);
       }},
  });
}

// The records of events: phases, failures, checkpoints, resumes, membership.
void add_event_parsers(std::map<std::string, parser>& table) {
  table.insert({
      {phase::event,
       [](fields& f) {
         phase r;
         f.integer("step", r.step).text("policy", r.policy).number("t", r.t);
         return f.done(r);
       }},
      {failure::event,
       [](fields& f) {
         failure r;
         f.text("error", r.error).number("t", r.t);
         return f.done(r);
       }},
      {checkpoint::event,
       [](fields& f) {
         checkpoint r;
         f.integer("step", r.step).integer("bytes", r.bytes).number("seconds", r.seconds);
         f.text("error", r.error).number("t", r.t);
         return f.done(r);
       }},
      {resumed::event,
       [](fields& f) {
         resumed r;
         f.integer("step", r.step).text("path", r.path).integer("skipped", r.skipped);
         f.number("t", r.t);
         return f.done(r);
       }},
      {node_lost::event,
       [](fields& f) {
         node_lost r;
         f.text("node", r.node).integers("workers", r.workers).text("reason", r.reason);
         f.integer("step", r.step).number("detection_s", r.detection_s);
         f.integer("live_nodes", r.live_nodes).number("unix_s", r.unix_s).number("t", r.t);
         return f.done(r);
       }},
      {step_redone::event,
       [](fields& f) {
         step_redone r;
         f.integer("step", r.step).integer("epoch", r.epoch).number("t", r.t);
         return f.done(r);
       }},
      {node_joined::event,
       [](fields& f) {
         node_joined r;
         f.text("node", r.node).integers("workers", r.workers).integer("step", r.step);
         f.integer("state_bytes", r.state_bytes).integer("epoch", r.epoch).number("t", r.t);
         return f.done(r);
       }},
      {replicas_checked::event,
       [](fields& f) {
         replicas_checked r;
         f.integers("workers", r.workers).integer("step", r.step).integer("epoch", r.epoch);
         f.text("sha256", r.sha256).number("t", r.t);
         return f.done(r);
       }},
      {confusion::event,
       [](fields& f) -> std::optional<any_record> {
         confusion r;
         f.integer("step", r.step).text("split", r.split).integer("classes", r.classes);
         f.integers("counts", r.counts).text("weights", r.weights).number("t", r.t);
         // A matrix that is not classes x classes of counts is no record (the page would
         // index past it).
         if (r.classes <= 0 || r.classes > 100000 ||
             r.counts.size() != static_cast<std::size_t>(r.classes * r.classes))
           return std::nullopt;
         for (auto n : r.counts)
           if (n < 0)
             return std::nullopt;
         return f.done(r);
       }},
  });
}

const std::map<std::string, parser>& parsers() {
  static const auto table = [] {
    std::map<std::string, parser> t;
    add_training_parsers(t);
    add_event_parsers(t);
    return t;
  }();
  return table;
}

}  // namespace

std::optional<any_record> parse_record(const nlohmann::json& line) {
  if (!line.is_object())
    return std::nullopt;
  const auto event = line.find("event");
  if (event == line.end() || !event->is_string())
    return std::nullopt;
  const auto parse = parsers().find(event->get<std::string>());
  if (parse == parsers().end())
    return std::nullopt;
  fields f(line);
  return parse->second(f);
}

bool is_known_event(const std::string& event) {
  return parsers().count(event) > 0;
}

int64_t records_in(const nlohmann::json& line) {
  for (const char* key : {"steps", "count"}) {
    const auto it = line.find(key);
    if (it != line.end() && it->is_number_integer() && it->get<int64_t>() >= 1)
      return it->get<int64_t>();
  }
  return 1;
}

}  // namespace troupe::records
