// The folder a run leaves behind: job.json (resolved), metrics.jsonl (streamed during the run),
// summary.json, final_weights.pt (and final_model.pt for a TorchScript model). Every file but the
// streamed log is written atomically.
//
// A run whose disk fills up must still say so in summary.json: its folder holds a reserve
// (.summary-space, 256 KiB) from the start, given up just before the summary is written.
//
// A run_directory holds its folder's lock (core/run/folder_lock) while it lives.
#pragma once

#include "core/job/job_config.hpp"
#include "core/run/folder_lock.hpp"
#include "core/train/run_report.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace troupe {

/// runs/NAME-YYYYmmdd-HHMMSS (local time), the default output folder; -2, -3, ... after it
/// where that name is taken.
std::string default_run_directory(const std::string& job_name);

/// Removes the summary reserve of the run folder `path`, for whoever writes the summary of a
/// run that could not (a suite runner, for a job killed before it wrote one).
void give_up_summary_space(const std::string& path);

/// The file of stacked ensemble member k's weights: member_K.pt.
std::string member_weights_file(int64_t k);
/// Whether `name` is such a file's name.
bool is_member_weights_file(const std::string& name);

/// What a folder holds: one run's outputs, or a suite's (suite.json, its jobs' folders).
enum class folder_kind { run, suite };

class run_directory {
 public:
  /// Creates `path` (and parents). Refuses, with job_error, a path that is a file or a folder
  /// that is not empty, unless `overwrite` is set, or a folder another run holds: a run never
  /// mixes its files with another's. `overwrite` removes the outputs of the run (or suite) there
  /// before, and refuses a folder of the other kind, whose files it would leave beside its own,
  /// or one where it would remove or overwrite `input` (the job file the run reads: --force
  /// into its own folder replaced exp/job.json with the resolved job).
  run_directory(std::string path, bool overwrite, folder_kind kind = folder_kind::run,
                const std::string& input = "");
  /// A run folder to continue in (`--resume`): it must exist and no other run may hold it (or
  /// `lock` holds it already, taken before its checkpoints were read); nothing in it is removed,
  /// and metrics.jsonl loses only a record a killed run left half-written.
  static run_directory reopen(std::string path, folder_lock_ptr lock = nullptr);

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

  void write_job(const job_config& job) const;
  /// Makes the reserve for summary.json; where the disk has no room for it, the run starts
  /// without one.
  void reserve_summary_space() const;
  /// Gives up the reserve, then writes summary.json.
  void write_summary(const run_report& report, const job_config& job) const;
  /// validation_rows.json: which of the `rows` training rows the validation set holds
  /// (`indices`, ascending), so the split can be reproduced outside troupe.
  void write_validation_rows(int64_t rows, const std::vector<int64_t>& indices) const;
  /// A name -> tensor dictionary torch.load reads, as `name` in the folder.
  void write_weights(const std::vector<std::pair<std::string, at::Tensor>>& named,
                     const std::string& name = "final_weights.pt") const;
  /// Bytes made elsewhere (final_model.pt, the trained TorchScript module), written atomically.
  void write_bytes(const std::string& name, std::string_view bytes) const;

 private:
  run_directory() = default;

  std::string path_;
  folder_lock_ptr lock_;  ///< released when the last copy goes
};

}  // namespace troupe
