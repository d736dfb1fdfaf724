// `troupe run SUITE.json` for a file with `jobs` or `sweep`: each expanded job runs as a child
// `troupe run` process in its own folder, placed on the offered devices by the placement queue
// (core/suite/placement), as many at once as fit, the rest queued. The runner (suite_runner.cpp)
// samples each child's resident memory and wall time against the job's limits, stops a job
// over them, and gives its slot to the next one; a job that fails for any reason leaves the
// others running. With stop_losers it also reads each job's metrics.jsonl as it grows and stops
// a job whose validation accuracy falls below the finished jobs' median
// (core/suite/stop_losers). This file checks the suite, prepares its folder, and at the end
// writes summary.json for the suite and leaderboard.json, and prints the table.
#include "apps/troupe/commands.hpp"
#include "apps/troupe/job_loading.hpp"
#include "apps/troupe/suite_commands.hpp"
#include "apps/troupe/suite_display.hpp"
#include "apps/troupe/suite_runner.hpp"
#include "core/config/parse_job.hpp"
#include "core/data/data_source.hpp"
#include "core/errors.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/terminal_output.hpp"
#include "core/run/run_directory.hpp"
#include "core/run/run_plan.hpp"
#include "core/suite/placement.hpp"
#include "core/suite/suite_results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string_view>

namespace troupe {
namespace {

int64_t longest(const std::vector<int64_t>& steps) {
  return steps.empty() ? 0 : *std::max_element(steps.begin(), steps.end());
}

// How many jobs start together: max_concurrent, unless the devices' threads hold fewer of them
// (a job takes its threads for as long as it runs).
std::size_t starting_together(const suite_config& suite) {
  std::vector<placement_request> requests;
  for (const auto& j : suite.jobs)
    requests.push_back(j.request);
  return placement_queue(suite.devices, std::move(requests), suite.max_concurrent)
      .start_ready()
      .size();
}

std::string render_suite_plan(const suite_config& suite) {
  std::string out = fmt::format("suite {}: {} job(s)", suite.name, suite.jobs.size());
  const auto swept = suite.combinations / std::max<std::size_t>(1, suite.trials);
  if (suite.trials > 0)
    out += fmt::format(" ({} entr{} x {} search trial(s){})", suite.entries,
                       suite.entries == 1 ? "y" : "ies", suite.trials,
                       swept > 1 ? fmt::format(" x {} sweep combinations", swept) : "");
  else if (suite.combinations > 1)
    out += fmt::format(" ({} entr{} x {} sweep combinations)", suite.entries,
                       suite.entries == 1 ? "y" : "ies", suite.combinations);
  out += ", devices:";
  for (const auto& d : suite.devices)
    out += fmt::format(" {} ({} threads)", d.name, d.threads);
  out += fmt::format(", at most {} at once", suite.max_concurrent);
  const auto starting = starting_together(suite);
  if (starting < static_cast<std::size_t>(suite.max_concurrent) && starting < suite.jobs.size())
    out += fmt::format(
        " ({} at the start: the devices' threads fit {} of these jobs, each holding its threads "
        "while it runs; offer more devices[].threads, or give the jobs fewer "
        "parallelism.threads_per_replica, to run more)",
        starting, starting);
  if (suite.stop_losers_after)
    out += fmt::format(", stop_losers after {} evaluation(s)", *suite.stop_losers_after);
  if (suite.asha)
    out += fmt::format(", asha from {} steps keeping 1/{} at each rung", suite.asha->min_steps,
                       suite.asha->reduction);
  out += "\n";
  for (const auto& j : suite.jobs) {
    out += fmt::format("  {}: {} thread(s) on {}", j.job.name, j.request.threads, j.request.device);
    if (j.limits.memory_mb)
      out += fmt::format(", memory <= {} MiB", *j.limits.memory_mb);
    if (j.limits.time_s)
      out += fmt::format(", wall time <= {} s", *j.limits.time_s);
    out += fmt::format(", {}\n", j.overrides.dump());
  }
  return out;
}

// Checks every job's plan against its data (batch sizes, pipeline splits) before anything runs;
// returns each job's steps.
std::vector<int64_t> check_plans(const suite_config& suite) {
  std::vector<std::string> problems;
  std::vector<int64_t> steps;
  // The facts of each data section read once: the jobs of a sweep share theirs, and reading
  // them means reading tensor files and tables whole, or decoding every image of a folder.
  std::map<std::string, data_facts> facts;
  for (const auto& j : suite.jobs) {
    try {
      // A missing data file stops the suite here rather than failing every job that reads it.
      const auto key = to_json(j.job)["data"].dump();
      auto known = facts.find(key);
      if (known == facts.end())
        known = facts.emplace(key, read_data_facts(j.job.data)).first;
      steps.push_back(make_run_plan(j.job, known->second).rules.total_steps());
    } catch (const job_error& e) {
      for (const auto& p : e.problems())
        problems.push_back("job " + j.job.name + ": " + p);
    } catch (const data_error& e) {
      problems.push_back("job " + j.job.name + ": data: " + e.what());
    }
  }
  // A first rung no job reaches stops none: asha was accepted and did nothing.
  if (problems.empty() && suite.asha && suite.asha->min_steps >= longest(steps))
    problems.push_back(fmt::format(
        "/asha/min_steps: {} steps, not fewer than the longest job's {}: no job reaches the "
        "first rung, so asha would stop none",
        suite.asha->min_steps, longest(steps)));
  if (!problems.empty())
    throw job_error(std::move(problems));
  return steps;
}
// summary.json, leaderboard.json and the table; the exit status of the suite.
int write_outputs(const suite_config& suite, const run_directory& dir,
                  const std::vector<suite_job_result>& results) {
  try {
    write_file_atomically(dir.file("leaderboard.json"), leaderboard_json(results).dump(2) + "\n");
    write_file_atomically(
        dir.file("summary.json"),
        suite_summary_json(suite.name, results, suite_was_interrupted()).dump(2) + "\n");
  } catch (const std::exception& e) {
    print_to_terminal(stderr, "error: {}\n", e.what());
    return exit_failed;
  }
  print_to_terminal(stdout, "{}", render_leaderboard(results));
  // The table first, whole (flushed), where stdout and stderr share one file (> log 2>&1).
  std::map<run_status, int> count;
  for (const auto& r : results)
    ++count[r.status];
  if (suite_was_interrupted())
    print_to_terminal(
        stderr,
        "error: the suite was interrupted: of {} jobs, {} succeeded, {} stopped, {} not "
        "started, {} failed\n",
        results.size(), count[run_status::succeeded], count[run_status::stopped],
        count[run_status::not_started], count[run_status::failed]);
  else if (const int failed = count[run_status::failed] + count[run_status::not_started])
    print_to_terminal(stderr, "error: {} of {} jobs did not succeed\n", failed, results.size());
  print_to_terminal(stdout, "outputs in {}\n", dir.path());
  if (suite_succeeded(results))
    return exit_ok;
  return suite_was_interrupted() ? exit_interrupted : exit_failed;
}

// The suite's folder before anything runs: the file as run, each job's spec, the logs folder;
// the results named. Returns the program to start the jobs with (this one).
std::string prepare_folder(const nlohmann::json& file, const suite_config& suite,
                           const run_directory& dir, std::vector<suite_job_result>& results,
                           bool force) {
  if (force) {  // the specs and logs of the suite run before go with its summary (run_directory)
    std::filesystem::remove_all(dir.file("specs"));
    std::filesystem::remove_all(dir.file("logs"));
  }
  write_file_atomically(dir.file("suite.json"), file.dump(2) + "\n");
  std::filesystem::create_directories(dir.file("specs"));
  std::filesystem::create_directories(dir.file("logs"));
  for (std::size_t i = 0; i < suite.jobs.size(); ++i) {
    results[i].name = suite.jobs[i].job.name;
    results[i].overrides = suite.jobs[i].overrides;
    results[i].loss = suite.jobs[i].job.training.loss;
    write_file_atomically(dir.file("specs/" + results[i].name + ".json"),
                          suite.jobs[i].resolved.dump(2) + "\n");
  }
  return self_executable();
}

// A problem of an entry's key the entry does not set itself ("/jobs/0/retries: ...") came from
// the suite's base, which `--set retries=101` writes: it is judged as the base's key.
std::string blamed_in_suite(const job_source& source, const nlohmann::json& file,
                            const std::string& problem) {
  constexpr std::string_view entries = "/jobs/";
  const auto blamed = blamed_source(source, problem);
  if (blamed != source.path || problem.rfind(entries, 0) != 0)
    return blamed;
  const auto slash = problem.find('/', entries.size());  // after the entry's index
  const auto colon = problem.find(": ");
  if (slash == std::string::npos || colon == std::string::npos || slash > colon)
    return blamed;
  try {
    const auto entry = nlohmann::json::json_pointer(problem.substr(0, slash));
    const auto key = nlohmann::json::json_pointer(problem.substr(slash, colon - slash));
    if (file.contains(entry) && file.at(entry).contains(key))
      return blamed;  // the entry sets it: the file's (or a --set of the entry's)
  } catch (const nlohmann::json::exception&) {
    return blamed;
  }
  return blamed_source(source, problem.substr(slash));
}

// Where the suite file gives job `entry`'s key at `key` (JSON pointers; entry "" for a sweep's
// or a search's job): its entry's key, or the sweep's or the search space's dotted key holding
// it ("/sweep/optimizer.lr"); "" where the job takes the key from the suite's base.
std::string where_file_gives(const nlohmann::json& file, const std::string& entry,
                             const std::string& key) {
  try {
    if (!entry.empty() && file.contains(nlohmann::json::json_pointer(entry + key)))
      return entry + key;
  } catch (const nlohmann::json::exception&) {
    return entry + key;  // not a pointer JSON spells: left to the file
  }
  const auto varied = [&key](const nlohmann::json& keys, const std::string& where) {
    if (!keys.is_object())
      return std::string();
    for (const auto& [dotted, values] : keys.items()) {
      std::string pointer = "/" + dotted;
      std::replace(pointer.begin(), pointer.end(), '.', '/');
      if (key == pointer || key.rfind(pointer + "/", 0) == 0 || pointer.rfind(key + "/", 0) == 0)
        return where + "/" + dotted;
    }
    return std::string();
  };
  if (const auto sweep = file.find("sweep"); sweep != file.end())
    if (auto at = varied(*sweep, "/sweep"); !at.empty())
      return at;
  if (const auto search = file.find("search"); search != file.end() && search->is_object())
    if (const auto space = search->find("space"); space != search->end())
      return varied(*space, "/search/space");
  return "";
}

// A job's own problem ("job lr=0.1: /training/steps: ..." or "job a (/jobs/0): /x: ..."): its
// value came from where the file gives the key (the job's entry, the sweep or the search
// space) or else from the suite's base, and is the --set's that wrote it there (it named the
// file for all of them), or the file's.
std::string blamed_job_problem(const job_source& source, const nlohmann::json& file,
                               const std::string& problem) {
  const auto key_at = problem.find(": /");
  if (problem.rfind("job ", 0) != 0 || key_at == std::string::npos)
    return source.path;
  const auto rest = problem.substr(key_at + 2);  // "/training/steps: must be ..."
  const auto colon = rest.find(": ");
  std::string entry;
  if (const auto open = problem.rfind(" (/jobs/", key_at); open != std::string::npos)
    entry = problem.substr(open + 2, key_at - 1 - (open + 2));
  const auto given = where_file_gives(file, entry, rest.substr(0, colon));
  return blamed_source(
      source, given.empty()
                  ? rest
                  : given + (colon == std::string::npos ? std::string() : rest.substr(colon)));
}

// Prints the problems, each named by the --set or the file it came from; exit_usage.
int refuse(const job_source& source, const nlohmann::json& file, const job_error& e) {
  std::vector<std::string> named;
  for (const auto& p : e.problems())
    named.push_back((p.rfind("job ", 0) == 0 ? blamed_job_problem(source, file, p)
                                             : blamed_in_suite(source, file, p)) +
                    ": " + p);
  print_problems(stderr, job_error(named));
  return exit_usage;
}

}  // namespace

int validate_suite(const job_source& source, const nlohmann::json& file) {
  try {
    const auto suite = parse_suite(file);
    (void)check_plans(suite);
    print_to_terminal(stdout, "{}: valid\n{}", source.path, render_suite_plan(suite));
    return exit_ok;
  } catch (const job_error& e) {
    return refuse(source, file, e);
  }
}

int run_suite(const run_command& cmd, const job_source& source, const nlohmann::json& file) {
  suite_config suite;
  std::optional<run_directory> dir;
  std::vector<int64_t> steps;
  try {
    suite = parse_suite(file);
    steps = check_plans(suite);
    dir.emplace(cmd.out.empty() ? default_run_directory(suite.name) : cmd.out, cmd.force,
                folder_kind::suite, source.path);
    if (!cmd.quiet)
      print_to_terminal(stdout, "{}", render_suite_plan(suite));
  } catch (const job_error& e) {
    return refuse(source, file, e);
  }

  std::vector<suite_job_result> results(suite.jobs.size());
  std::vector<job_row> rows(suite.jobs.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].name = suite.jobs[i].job.name;
    rows[i].total_steps = steps[i];
  }
  suite_display display(std::move(rows), stdout, cmd.quiet);
  try {
    suite_run run{suite,
                  *dir,
                  prepare_folder(file, suite, *dir, results, cmd.force),
                  cmd.force,
                  results,
                  {},
                  loser_watch(suite.stop_losers_after, suite.asha, longest(steps),
                              suite.jobs.size(), suite.judged),
                  display};
    run_jobs(run);
  } catch (const std::exception& e) {
    print_to_terminal(stderr, "error: {}\n", e.what());
    return exit_failed;
  }
  for (auto& r : results)
    if (r.status == run_status::not_started)
      r.error = "the suite was interrupted first";
  return write_outputs(suite, *dir, results);
}

}  // namespace troupe
