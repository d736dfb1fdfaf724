#include "core/report/suite_history.hpp"

#include <algorithm>
#include <filesystem>

namespace troupe {
namespace {

namespace fs = std::filesystem;

// The job names in suite order: summary.json lists them once the suite ends; before that the
// expanded specs (specs/NAME.json, written when the suite starts) do, in name order.
std::vector<std::string> job_names(const fs::path& dir, const nlohmann::json& summary) {
  std::vector<std::string> names;
  if (summary.is_object() && summary.contains("jobs") && summary["jobs"].is_array()) {
    for (const auto& j : summary["jobs"])
      if (j.is_object() && j.contains("name") && j["name"].is_string())
        names.push_back(j["name"].get<std::string>());
    return names;
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir / "specs", ec))
    if (entry.path().extension() == ".json")
      names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

bool is_suite_folder(const std::string& folder) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(folder) / "suite.json", ec);
}

suite_history read_suite_history(const std::string& folder,
                                 const std::function<run_history(const std::string&)>& read_job) {
  const fs::path dir(folder);
  suite_history s;
  s.folder = folder;
  s.summary = read_json_object((dir / "summary.json").string());
  s.leaderboard = read_json_object((dir / "leaderboard.json").string());
  const auto spec = read_json_object((dir / "suite.json").string());
  if (spec.is_object() && spec.contains("name") && spec["name"].is_string())
    s.name = spec["name"].get<std::string>();
  else
    s.name = dir.filename().string();
  for (const auto& name : job_names(dir, s.summary)) {
    // Names come from files in the folder: one that leaves it is not a job of this suite.
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      continue;
    suite_job_history job{name, std::nullopt};
    std::error_code ec;
    // A job folder that exists but holds nothing yet is a job that is starting.
    if (fs::exists(dir / name / "metrics.jsonl", ec) || fs::exists(dir / name / "summary.json", ec))
      job.run = read_job((dir / name).string());
    s.jobs.push_back(std::move(job));
  }
  return s;
}

}  // namespace troupe
