#include "core/run/run_directory.hpp"

#include "core/config/parse_job.hpp"
#include "core/data/preprocessing.hpp"
#include "core/errors.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/weights_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

namespace troupe {

namespace fs = std::filesystem;

std::string default_run_directory(const std::string& job_name) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  // Runs started within one second took the same folder: the second was refused as "not empty"
  // for a folder its user never named, or with --force wiped the first's results.
  const auto base = "runs/" + job_name + "-" + stamp;
  std::error_code ec;
  auto name = base;
  for (int k = 2; fs::exists(fs::symlink_status(name, ec)); ++k)
    name = base + "-" + std::to_string(k);
  return name;
}

namespace {

// A folder troupe cannot write in (read-only, not the user's) is refused before the plan is shown:
// found only at summary.json, the run had trained for nothing and its job.json was never written.
void check_writable(const std::string& folder, const std::string& option) {
  const auto probe = folder + "/.write-check-" + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    throw job_error(
        {option + " " + folder + ": cannot write in this folder: " + std::strerror(errno)});
  ::close(fd);
  ::unlink(probe.c_str());
}

// What --force removes, and a run or a suite writes, directly in its folder.
constexpr const char* forced_outputs[] = {
    "metrics.jsonl",        "summary.json",    "final_weights.pt",
    "final_model.pt",       "best_weights.pt", "job.json",
    "validation_rows.json", "plan.txt",        "report.html",
    "leaderboard.json",     "suite.json"};

// Whether --force on `folder` may remove or overwrite `file`: a file of an output's name
// directly in it, or anything in a folder below it (checkpoints, a suite's specs and its jobs'
// folders).
bool forced_outputs_replace(const std::string& folder, const std::string& file) {
  std::error_code ec;
  const auto where = fs::weakly_canonical(folder, ec);
  const auto what = fs::weakly_canonical(file, ec);
  if (ec || file.empty())
    return false;
  auto rest = what.lexically_relative(where);
  if (rest.empty() || *rest.begin() == "..")
    return false;  // not inside the folder
  if (std::distance(rest.begin(), rest.end()) > 1)
    return true;
  const auto name = rest.string();
  return is_member_weights_file(name) ||
         std::any_of(std::begin(forced_outputs), std::end(forced_outputs),
                     [&](const char* output) { return name == output; });
}

}  // namespace

run_directory::run_directory(std::string path, bool overwrite, folder_kind kind,
                             const std::string& input)
    : path_(std::move(path)) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path_, ec)) && !fs::exists(path_, ec))
    throw job_error({"--out " + path_ + ": a link to " + fs::read_symlink(path_, ec).string() +
                     ", which does not exist (make that folder, or give another)"});
  if (fs::exists(path_, ec)) {
    if (!fs::is_directory(path_, ec))
      throw job_error({"--out " + path_ + ": exists and is not a folder"});
    // Before anything is checked or removed: --force must not clear a folder a run still writes.
    lock_ = std::make_shared<folder_lock>(path_, "--out");
    if (!overwrite && !fs::is_empty(path_, ec))
      throw job_error({"--out " + path_ +
                       ": folder is not empty (choose another or pass --force to reuse it)"});
    if (overwrite) {
      // A run's files beside a suite's (or the other way round) made a folder whose readers
      // (load_model, read_suite) found the old kind's outputs and took them as the new one's.
      const bool suite_there = fs::exists(fs::path(path_) / "suite.json", ec);
      const bool run_there = !suite_there && fs::exists(fs::path(path_) / "job.json", ec);
      if (kind == folder_kind::run ? suite_there : run_there)
        throw job_error({"--out " + path_ + ": holds a " + (suite_there ? "suite's" : "run's") +
                         " outputs, and --force reuses a folder only for another " +
                         (suite_there ? "suite" : "run") + ": choose another folder"});
      if (forced_outputs_replace(path_, input))
        throw job_error({"--out " + path_ + " --force: would remove or overwrite the job file " +
                         input + ", which is in that folder: move it, or choose another folder"});
      for (const char* name : forced_outputs)
        fs::remove(fs::path(path_) / name, ec);
      fs::remove_all(fs::path(path_) / "checkpoints", ec);
      // A stacked ensemble's members: a run of fewer members left the others' files, which
      // load_model then read as this run's.
      for (fs::directory_iterator it(path_, ec); !ec && it != fs::directory_iterator();
           it.increment(ec))
        if (is_member_weights_file(it->path().filename().string()))
          fs::remove(it->path(), ec);
      remove_abandoned_temporaries(path_);
    }
  }
  fs::create_directories(path_, ec);
  if (ec)
    throw job_error({"--out " + path_ + ": cannot create folder: " + ec.message()});
  if (!lock_)
    lock_ = std::make_shared<folder_lock>(path_, "--out");
  check_writable(path_, "--out");
}

namespace {

constexpr const char* summary_reserve = ".summary-space";
constexpr off_t summary_reserve_bytes = 256 << 10;

}  // namespace

void run_directory::reserve_summary_space() const {
  const auto path = file(summary_reserve);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  const bool reserved = ::posix_fallocate(fd, 0, summary_reserve_bytes) == 0;
  ::close(fd);
  if (!reserved)
    ::unlink(path.c_str());
}

namespace {

// Cuts `path` after its last newline: a record half-written when its run was killed.
void drop_torn_record(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec || size == 0)
    return;
  std::ifstream in(path, std::ios::binary);
  std::uintmax_t keep = size;
  char c = 0;
  while (keep > 0) {
    in.seekg(static_cast<std::streamoff>(keep - 1));
    if (!in.get(c) || c == '\n')
      break;
    --keep;
  }
  if (keep < size)
    fs::resize_file(path, keep, ec);
}

}  // namespace

run_directory run_directory::reopen(std::string path, folder_lock_ptr lock) {
  std::error_code ec;
  if (!fs::is_directory(path, ec))
    throw job_error({"--resume " + path + ": not a run folder"});
  if (!lock)
    lock = std::make_shared<folder_lock>(path, "--resume");
  check_writable(path, "--resume");
  drop_torn_record(fs::path(path) / "metrics.jsonl");
  remove_abandoned_temporaries(path);
  run_directory dir;
  dir.path_ = std::move(path);
  dir.lock_ = std::move(lock);
  return dir;
}

std::string member_weights_file(int64_t k) {
  return "member_" + std::to_string(k) + ".pt";
}

bool is_member_weights_file(const std::string& name) {
  constexpr std::string_view prefix = "member_", suffix = ".pt";
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  const auto digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  return digits.find_first_not_of("0123456789") == std::string::npos;
}

void run_directory::write_job(const job_config& job) const {
  write_file_atomically(file("job.json"), to_json(job).dump(2) + "\n");
}

void give_up_summary_space(const std::string& path) {
  ::unlink((path + "/" + summary_reserve).c_str());
}

void run_directory::write_summary(const run_report& report, const job_config& job) const {
  give_up_summary_space(path_);
  auto j = to_json(report);
  j["name"] = job.name;
  j["policy"] = to_string(job.parallelism.policy);
  if (job.parallelism.pipelined()) {
    j["stages"] = job.parallelism.stages;
    j["micro_batches"] = job.parallelism.micro_batches;
    j["schedule"] = to_string(job.parallelism.schedule);
  }
  j["outputs"] = {{"job", "job.json"}, {"metrics", "metrics.jsonl"}};
  // Beside the weights: what their inputs must look like (a .pt state dict cannot carry it and
  // still load with load_state_dict(strict=True)).
  if (const auto pre = preprocessing_json(job.data.kind); !pre.is_null())
    j["preprocessing"] = pre;
  if (job.data.validation > 0)
    j["outputs"]["validation_rows"] = "validation_rows.json";
  if (report.final_weights.defined())
    j["outputs"]["weights"] = "final_weights.pt";
  if (report.final_weights.defined() && job.model.kind == model_kind::torchscript)
    j["outputs"]["model"] = "final_model.pt";
  if (report.best_weights.defined())
    j["outputs"]["best_weights"] = "best_weights.pt";
  if (!report.member_weights.empty()) {
    auto members = nlohmann::json::array();
    for (std::size_t k = 0; k < report.member_weights.size(); ++k)
      members.push_back(member_weights_file(static_cast<int64_t>(k)));
    j["outputs"]["members"] = members;
  }
  write_file_atomically(file("summary.json"), j.dump(2) + "\n");
}

void run_directory::write_validation_rows(int64_t rows, const std::vector<int64_t>& indices) const {
  const nlohmann::json j = {{"training_rows", rows}, {"indices", indices}};
  write_file_atomically(file("validation_rows.json"), j.dump() + "\n");
}

void run_directory::write_weights(const std::vector<std::pair<std::string, at::Tensor>>& named,
                                  const std::string& name) const {
  save_weights(file(name), named);
}

void run_directory::write_bytes(const std::string& name, std::string_view bytes) const {
  write_file_atomically(file(name), bytes);
}

}  // namespace troupe
