#include "core/suite/suite_config.hpp"

#include "core/config/json_fields.hpp"
#include "core/config/overrides.hpp"
#include "core/config/parse_job.hpp"
#include "core/device/device_plan.hpp"
#include "core/errors.hpp"
#include "core/suite/job_names.hpp"
#include "core/suite/random_search.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <thread>

namespace troupe {
namespace {

using assignment = setting_values;

const std::vector<std::string> suite_keys{"jobs",           "sweep",       "search", "devices",
                                          "max_concurrent", "stop_losers", "asha"};

bool valid_device_offer(const std::string& d) {
  const auto spec = parse_device(d);
  return spec && (!spec->is_cuda() || spec->index);
}

std::vector<device_offer> read_devices(const nlohmann::json& file,
                                       std::vector<std::string>& problems) {
  const auto hardware = static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  if (!file.contains("devices"))
    return {{"cpu", hardware}};
  const auto& list = file["devices"];
  if (!list.is_array() || list.empty()) {
    problems.push_back(
        "/devices: must be a non-empty array of {\"device\": \"cpu\", "
        "\"threads\": N}, got " +
        render_value(list));
    return {};
  }
  std::vector<device_offer> devices;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto where = "/devices/" + std::to_string(i);
    object_reader r(list[i], where, problems);
    device_offer d{"cpu", hardware};
    r.string("device", d.name, valid_device_offer, "\"cpu\" or \"cuda:N\"");
    r.integer("threads", d.threads, 1, 4096);
    r.finish({"device", "threads"});
    if (d.name.rfind("cuda", 0) == 0 && !local_inventory().cuda_built)
      problems.push_back(where + "/device: " + d.name +
                         " is not available: this build of troupe has no CUDA");
    devices.push_back(d);
  }
  return devices;
}

// The dotted keys and value lists of `sweep`, in the file's (sorted) key order.
std::vector<std::pair<std::string, nlohmann::json>> read_sweep(const nlohmann::json& file,
                                                               std::vector<std::string>& problems) {
  std::vector<std::pair<std::string, nlohmann::json>> axes;
  if (!file.contains("sweep"))
    return axes;
  const auto& sweep = file["sweep"];
  if (!sweep.is_object() || sweep.empty()) {
    problems.push_back("/sweep: must be an object of \"dotted.key\": [values], got " +
                       render_value(sweep));
    return axes;
  }
  for (const auto& [key, values] : sweep.items()) {
    if (!values.is_array() || values.empty())
      problems.push_back("/sweep/" + pointer_token(key) +
                         ": must be a non-empty array of values, got " + render_value(values));
    else
      axes.emplace_back(key, values);
  }
  return axes;
}

// Every sweep combination with every search trial (trial slowest); a key both set is refused.
std::vector<assignment> with_trials(const std::vector<assignment>& combos,
                                    const std::vector<search_trial>& trials,
                                    std::vector<std::string>& problems) {
  if (!trials.empty() && !combos.empty())
    for (const auto& [key, value] : trials.front())
      for (const auto& [swept, values] : combos.front())
        if (key == swept)
          problems.push_back("/search/space/" + pointer_token(key) +
                             ": also in sweep; give each key one of them");
  std::vector<assignment> out;
  for (const auto& trial : trials)
    for (const auto& combo : combos) {
      auto both = trial;
      both.insert(both.end(), combo.begin(), combo.end());
      out.push_back(std::move(both));
    }
  return out;
}

// The cartesian product of the axes, first axis slowest.
std::vector<std::vector<std::pair<std::string, nlohmann::json>>> combinations(
    const std::vector<std::pair<std::string, nlohmann::json>>& axes) {
  std::vector<std::vector<std::pair<std::string, nlohmann::json>>> out{{}};
  for (const auto& [key, values] : axes) {
    std::vector<std::vector<std::pair<std::string, nlohmann::json>>> next;
    for (const auto& partial : out)
      for (const auto& v : values) {
        auto c = partial;
        c.emplace_back(key, v);
        next.push_back(std::move(c));
      }
    out = std::move(next);
  }
  return out;
}

void read_limits(const nlohmann::json& job, const std::string& where, job_limits& limits,
                 std::vector<std::string>& problems) {
  if (!job.contains("limits"))
    return;
  object_reader r(job["limits"], where + "/limits", problems);
  double memory = 0, time = 0;
  if (r.has("memory_mb") && r.number("memory_mb", memory, 0, true, HUGE_VAL, false))
    limits.memory_mb = memory;
  if (r.has("time_s") && r.number("time_s", time, 0, true, HUGE_VAL, false))
    limits.time_s = time;
  r.finish({"memory_mb", "time_s"});
}

void read_retries(const nlohmann::json& job, const std::string& where, int64_t& retries,
                  std::vector<std::string>& problems) {
  if (!job.contains("retries"))
    return;
  const auto& v = job["retries"];
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 100)
    problems.push_back(where + "/retries: must be an integer from 0 to 100, got " +
                       render_value(v));
  else
    retries = v.get<int64_t>();
}

// The stopping rules compare validation figures: a job without a validation set would have them
// stop on test figures, tuning on the test set. They compare accuracies of classifiers and, in a
// suite of regression jobs (mse, l1: no accuracy), losses, which compare only between jobs of one
// loss (an mse is no mae). False (a problem added, naming `key` and the first job that breaks
// this) when a job lacks a validation set or the jobs' figures do not compare.
bool every_job_has_a_judged_figure(const char* key, const std::vector<suite_job>& jobs,
                                   std::vector<std::string>& problems) {
  for (const auto& j : jobs) {
    const auto loss = j.job.training.loss;
    const auto first = jobs.front().job.training.loss;
    if (is_regression(loss) != is_regression(first) || (is_regression(loss) && loss != first)) {
      problems.push_back(std::string(key) + ": compares the jobs' validation " +
                         (is_regression(first) ? "losses" : "accuracies") + ", and job " +
                         j.job.name + " trains with training.loss " + to_string(loss) +
                         " where job " + jobs.front().job.name + " trains with " +
                         to_string(first) +
                         ": the rules compare classifiers by accuracy, or regression jobs of one "
                         "loss by that loss");
      return false;
    }
    if (j.job.data.validation <= 0) {
      problems.push_back(std::string(key) +
                         ": needs every job to hold out a validation set (data.validation), and "
                         "job " +
                         j.job.name +
                         " has none; stopping on test figures would tune on the test set");
      return false;
    }
  }
  return true;
}

// `"stop_losers": {"after": K}`. The rule compares validation figures, so every job must hold
// out a validation set: ranking or stopping on the test set would tune on it.
std::optional<int64_t> read_stop_losers(const nlohmann::json& file,
                                        const std::vector<suite_job>& jobs,
                                        std::vector<std::string>& problems) {
  if (!file.contains("stop_losers"))
    return std::nullopt;
  object_reader r(file["stop_losers"], "/stop_losers", problems);
  int64_t after = 0;
  const bool good = r.integer("after", after, 1, 1000000);
  if (r.valid() && !r.has("after"))
    r.problem("after", "is required: the number of evaluations after which a job is compared");
  r.finish({"after"});
  if (!r.valid() || !good || !r.has("after"))
    return std::nullopt;
  if (!every_job_has_a_judged_figure("/stop_losers", jobs, problems))
    return std::nullopt;
  return after;
}

// More would take minutes to expand and validate (and each job is a process to run): a few
// hundred bytes of sweep can ask for billions.
constexpr std::size_t max_suite_jobs = 10000;

// entries x the sweep's combinations, or max_suite_jobs + 1 when that is more.
std::size_t job_count(std::size_t entries,
                      const std::vector<std::pair<std::string, nlohmann::json>>& axes) {
  std::size_t count = entries;
  for (const auto& [key, values] : axes)
    count = values.size() > max_suite_jobs / count ? max_suite_jobs + 1 : count * values.size();
  return std::min(count, max_suite_jobs + 1);
}

// json.value(key, fallback) throws when the key holds something else than a string.
std::string string_or(const nlohmann::json& json, const char* key, const std::string& fallback) {
  const auto it = json.find(key);
  return it != json.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// The suite's entries: the objects of its "jobs", or one empty entry (a sweep of the file's own
// job).
std::vector<nlohmann::json> read_entries(const nlohmann::json& file,
                                         std::vector<std::string>& problems) {
  std::vector<nlohmann::json> entries{nlohmann::json::object()};
  if (!file.contains("jobs"))
    return entries;
  const auto& jobs = file["jobs"];
  if (!jobs.is_array() || jobs.empty()) {
    problems.push_back("/jobs: must be a non-empty array of job objects, got " +
                       render_value(jobs));
    return entries;
  }
  entries.clear();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].is_object())
      problems.push_back("/jobs/" + std::to_string(i) + ": must be an object, got " +
                         render_value(jobs[i]));
    entries.push_back(jobs[i].is_object() ? jobs[i] : nlohmann::json::object());
  }
  return entries;
}

// Where one job of the suite comes from: entry `entry` of the file (at `where`) with the
// sweep's combination `combination` of `combinations` set, the suite's job number `index`.
struct job_origin {
  const nlohmann::json& entry;
  const std::string& where;
  const assignment& values;
  const std::set<std::string>& searched;  ///< keys of `values` from the search, not the sweep
  const std::string& name;                ///< the job's name (job_names); empty: the entry's
};

// The name of each job (entry e, combination c at e * combinations + c), empty where the entry
// names it: a named entry keeps its name when nothing is swept; with a sweep or a search its
// jobs are "ENTRY-SETTINGS", an unnamed entry's "SUITE-SETTINGS", else numbered as before
// ("ENTRY-c", "SUITE-index"; see core/suite/job_names).
std::vector<std::string> name_jobs(const std::string& suite_name,
                                   const std::vector<nlohmann::json>& entries,
                                   const std::vector<assignment>& combos) {
  std::vector<std::string> keys;
  for (const auto& combo : combos)
    for (const auto& [key, value] : combo)
      if (std::find(keys.begin(), keys.end(), key) == keys.end())
        keys.push_back(key);
  const auto shown = short_keys(keys);
  std::vector<std::optional<std::string>> wanted;
  std::vector<std::string> fallback;
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const bool named = entries[e].contains("name");
    const auto prefix = named && entries[e]["name"].is_string()
                            ? entries[e]["name"].get<std::string>()
                            : suite_name;
    for (std::size_t c = 0; c < combos.size(); ++c) {
      if (named && combos.size() == 1) {
        wanted.emplace_back(std::nullopt);
        fallback.emplace_back();  // the entry's own name
        continue;
      }
      const auto settings = settings_text(combos[c], shown);
      wanted.push_back(settings ? std::optional<std::string>(prefix + "-" + *settings)
                                : std::nullopt);
      fallback.push_back(prefix + "-" + std::to_string(named ? c : e * combos.size() + c));
    }
  }
  return pick_job_names(wanted, fallback);
}

// A key the sweep or the search sets in every job that an entry sets too: the entry's value
// would be replaced without a word (and still be listed among its overrides), so it is refused,
// as a key both in the sweep and in the search is.
void check_entry_not_shadowed(const nlohmann::json& entry, const std::string& where,
                              const assignment& values, const std::set<std::string>& searched,
                              std::vector<std::string>& problems) {
  for (const auto& [key, value] : values) {
    std::string pointer = "/" + key;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    bool set = false;
    try {
      set = entry.contains(nlohmann::json::json_pointer(pointer));
    } catch (const nlohmann::json::exception&) {
      // not a path JSON pointers can spell: apply_override names it
    }
    if (set)
      problems.push_back(where + pointer + ": also in " +
                         (searched.count(key) > 0 ? "search" : "sweep") +
                         ", which sets it in every job; give each key one of them");
  }
}

// One job of the suite, parsed and checked; nullopt (its problems added) when it does not parse.
std::optional<suite_job> expand_job(const nlohmann::json& base, const job_origin& from,
                                    std::vector<std::string>& problems) {
  auto json = base;
  json.merge_patch(from.entry);
  auto overrides = from.entry;
  for (const auto& [key, value] : from.values) {
    try {
      apply_override(json, key + "=" + value.dump());
      overrides[key] = value;
    } catch (const job_error& err) {
      problems.push_back((from.searched.count(key) > 0 ? "/search/space/" : "/sweep/") +
                         pointer_token(key) + ": " + err.problems().front());
    }
  }
  if (!from.name.empty())
    json["name"] = from.name;
  overrides.erase("name");
  suite_job job;
  job.overrides = overrides;
  job.request.device = string_or(json, "device", "cpu");
  if (json.contains("device") &&
      (!json["device"].is_string() || !is_device_name(job.request.device)))
    problems.push_back(from.where + "/device: must be \"cpu\", \"cuda\" or \"cuda:N\", got " +
                       render_value(json["device"]));
  read_limits(json, from.where, job.limits, problems);
  read_retries(json, from.where, job.retries, problems);
  // The job keeps its device kind: its rules depend on it (gpu_memory_mb needs a GPU). The
  // device the queue places it on is set when it starts ("cuda" becomes one GPU).
  json.erase("limits");
  json.erase("retries");
  try {
    job.job = parse_job(json);
  } catch (const job_error& err) {
    const auto label = string_or(json, "name", "?");
    for (const auto& p : err.problems())
      problems.push_back("job " + label + (from.where.empty() ? "" : " (" + from.where + ")") +
                         ": " + p);
    return std::nullopt;
  }
  auto& par = job.job.parallelism;
  // Jobs share the machine: one that does not say takes one thread per replica and leaves
  // the rest to the jobs beside it.
  if (par.threads_per_replica == 0)
    par.threads_per_replica = 1;
  job.request.threads = par.replicas * par.stages * par.threads_per_replica;
  job.resolved = to_json(job.job);
  return job;
}

// `"asha": {"min_steps": N, "reduction": R}`. Like stop_losers it compares validation figures,
// so every job must hold out a validation set; the two rules do not combine.
std::optional<asha_config> read_asha(const nlohmann::json& file, const std::vector<suite_job>& jobs,
                                     std::vector<std::string>& problems) {
  if (!file.contains("asha"))
    return std::nullopt;
  object_reader r(file["asha"], "/asha", problems);
  asha_config c;
  // Both read whatever the first gives: a bad min_steps left reduction unread, and finish()
  // then called it an unknown key.
  const bool steps_good = r.integer("min_steps", c.min_steps, 1, int64_t{1} << 40);
  const bool reduction_good = !r.has("reduction") || r.integer("reduction", c.reduction, 2, 1000);
  const bool good = steps_good && reduction_good;
  if (r.valid() && !r.has("min_steps"))
    r.problem("min_steps", "is required: the steps of the first rung");
  r.finish({"min_steps", "reduction"});
  if (!r.valid() || !good || !r.has("min_steps"))
    return std::nullopt;
  if (file.contains("stop_losers")) {
    problems.push_back("/asha: give asha or stop_losers, not both");
    return std::nullopt;
  }
  if (!every_job_has_a_judged_figure("/asha", jobs, problems))
    return std::nullopt;
  return c;
}

int64_t read_max_concurrent(const nlohmann::json& file, std::size_t jobs,
                            std::vector<std::string>& problems) {
  if (!file.contains("max_concurrent"))
    return static_cast<int64_t>(jobs);
  const auto& m = file["max_concurrent"];
  if (m.is_number_integer() && m.get<int64_t>() >= 1)
    return m.get<int64_t>();
  problems.push_back("/max_concurrent: must be an integer >= 1, got " + render_value(m));
  return static_cast<int64_t>(jobs);
}

}  // namespace

bool is_suite(const nlohmann::json& file) {
  return file.is_object() &&
         (file.contains("jobs") || file.contains("sweep") || file.contains("search"));
}

suite_config parse_suite(const nlohmann::json& file) {
  std::vector<std::string> problems;
  suite_config suite;
  suite.devices = read_devices(file, problems);
  const auto axes = read_sweep(file, problems);
  const auto search = read_search(file, static_cast<int64_t>(max_suite_jobs), problems);
  std::set<std::string> searched;
  if (search)
    for (const auto& a : search->axes)
      searched.insert(a.key);

  nlohmann::json base = file;
  for (const auto& key : suite_keys)
    base.erase(key);
  suite.name = string_or(base, "name", "suite");
  // The suite's name names its default folder (runs/NAME-TIME) even where every job names
  // itself: "../../x" wrote the suite outside runs/, a byte not UTF-8 failed it after its folder.
  if (base.contains("name") && (!base["name"].is_string() || !valid_run_name(suite.name)))
    problems.push_back("/name: must be " + std::string(run_name_rule) + ", got " +
                       render_value(base["name"]));

  const auto entries = read_entries(file, problems);
  suite.entries = entries.size();
  const auto trials = static_cast<std::size_t>(search ? search->trials : 1);
  if (job_count(entries.size(), axes) > max_suite_jobs / trials) {
    problems.push_back(std::string(search         ? "/search/trials"
                                   : axes.empty() ? "/jobs"
                                                  : "/sweep") +
                       ": the suite expands to more than " + std::to_string(max_suite_jobs) +
                       " jobs, the most it may hold");
    throw job_error(std::move(problems));
  }
  auto combos = combinations(axes);
  if (search)
    combos = with_trials(combos, draw_trials(*search), problems);
  suite.combinations = combos.size();
  suite.trials = search ? trials : 0;

  const auto job_names = name_jobs(suite.name, entries, combos);
  std::set<std::string> names;
  for (std::size_t e = 0; e < entries.size(); ++e)
    for (std::size_t c = 0; c < combos.size(); ++c) {
      const auto where = file.contains("jobs") ? "/jobs/" + std::to_string(e) : std::string("");
      if (c == 0)
        check_entry_not_shadowed(entries[e], where, combos[c], searched, problems);
      auto job = expand_job(
          base, {entries[e], where, combos[c], searched, job_names[e * combos.size() + c]},
          problems);
      if (!job)
        continue;
      if (!names.insert(job->job.name).second)
        problems.push_back(where + "/name: \"" + job->job.name +
                           "\" names two jobs; every job needs its own (it is its folder)");
      else if (suite_folder_entries.count(job->job.name) != 0)
        problems.push_back(where + "/name: \"" + job->job.name + "\" is the suite folder's own " +
                           (job->job.name.find('.') != std::string::npos ? "file" : "folder") +
                           "; a job's folder needs another name");
      suite.jobs.push_back(std::move(*job));
    }
  suite.max_concurrent = read_max_concurrent(file, suite.jobs.size(), problems);
  suite.stop_losers_after = read_stop_losers(file, suite.jobs, problems);
  suite.asha = read_asha(file, suite.jobs, problems);
  suite.judged.by_loss = !suite.jobs.empty() && is_regression(suite.jobs.front().job.training.loss);
  if (problems.empty())
    for (const auto& j : suite.jobs)
      if (auto why = unplaceable(suite.devices, j.request))
        problems.push_back("job " + j.job.name + ": " + *why);
  if (!problems.empty()) {
    // A bad key of an entry is found in each of its jobs (a sweep's combinations): once is
    // enough ("--set retries=101" was printed once per job).
    std::vector<std::string> once;
    for (auto& p : problems)
      if (std::find(once.begin(), once.end(), p) == once.end())
        once.push_back(std::move(p));
    throw job_error(std::move(once));
  }
  return suite;
}

}  // namespace troupe
