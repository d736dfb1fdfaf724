// What the fuzz targets share: the job checks both job-file targets run on whatever JSON they
// reach, a scratch file for the readers that take a path, and gzip in memory.
//
// A target returns quietly when the input is refused the way troupe refuses bad input (a
// job_error, a data_error, a caf::error); anything else escapes or aborts, and libFuzzer (or
// replay_main) reports it as a crash: another exception type, a broken round trip, a sanitizer
// report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace troupe::fuzz {

/// Aborts with `what` on stderr: a property the target checks does not hold.
[[noreturn]] void fail(const std::string& what);

/// A job's or a suite's JSON the way `troupe validate` takes it: a suite is expanded and
/// validated, a job validated; a valid job is written back with to_json and read again (which
/// must give no problem) and planned on a machine of 256 MiB (huge models are refused, not
/// built); of a suite, the first few jobs are planned. Returns quietly on job_error.
void check_job_json(const nlohmann::json& json);

/// A file of this process (under /dev/shm when there is one) that holds `bytes`, overwritten by
/// each call with the same `slot`; removed at exit.
std::string scratch_file(const std::string& slot, const std::string& bytes);

/// `bytes` as one gzip member (zlib, default level).
std::string gzip(const uint8_t* data, std::size_t size);

inline std::string as_text(const uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace troupe::fuzz
