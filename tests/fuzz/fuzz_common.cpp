#include "tests/fuzz/fuzz_common.hpp"

#include "core/config/parse_job.hpp"
#include "core/data/data_source.hpp"
#include "core/errors.hpp"
#include "core/run/run_plan.hpp"
#include "core/suite/suite_config.hpp"

#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

namespace troupe::fuzz {
namespace {

// Of a suite, this many jobs are planned: each plan builds a model.
constexpr std::size_t max_planned_jobs = 4;

// The machine the plan is made for: no GPU, 256 MiB. A job whose model copies need more is
// refused from its parameter count; one that fits is built (at most ~22M parameters, ~90 MB).
device_inventory small_machine() {
  device_inventory machine;
  machine.memory_bytes = 256.0 * (1 << 20);
  return machine;
}

// What `troupe run` writes (job.json) must read back as the same job.
void check_round_trip(const job_config& job) {
  const std::string text = to_json(job).dump(2);
  try {
    const auto back = parse_job(nlohmann::json::parse(text));
    if (to_json(back).dump(2) != text)
      fail("parse_job(to_json(job)) differs from job:\n" + text + "\n" + to_json(back).dump(2));
  } catch (const job_error& e) {
    fail("to_json(job) gives a job parse_job refuses: " + e.problems().front() + "\n" + text);
  }
}

void check_plan(const job_config& job) {
  try {
    const auto plan = make_run_plan(job, describe_data(job.data), small_machine());
    render_plan(plan);
  } catch (const job_error&) {
  }
}

struct scratch_files {
  std::map<std::string, std::string> paths;
  ~scratch_files() {
    for (const auto& [slot, path] : paths)
      std::remove(path.c_str());
  }
};

}  // namespace

void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz check failed: %s\n", what.c_str());
  std::abort();
}

void check_job_json(const nlohmann::json& json) {
  if (is_suite(json)) {
    suite_config suite;
    try {
      suite = parse_suite(json);
    } catch (const job_error&) {
      return;
    }
    // What `troupe suite` writes for each job, then plans.
    for (std::size_t i = 0; i < suite.jobs.size(); ++i) {
      const auto& j = suite.jobs[i];
      j.resolved.dump(2);
      j.overrides.dump();
      if (i < max_planned_jobs) {
        check_round_trip(j.job);
        check_plan(j.job);
      }
    }
    return;
  }
  job_config job;
  try {
    job = parse_job(json);
  } catch (const job_error&) {
    return;
  }
  check_round_trip(job);
  check_plan(job);
}

std::string scratch_file(const std::string& slot, const std::string& bytes) {
  static scratch_files files;
  auto& path = files.paths[slot];
  if (path.empty()) {
    const std::string folder = std::filesystem::is_directory("/dev/shm")
                                   ? "/dev/shm"
                                   : std::filesystem::temp_directory_path().string();
    path = folder + "/troupe-fuzz-" + std::to_string(getpid()) + "-" + slot;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush())
    fail("cannot write the scratch file " + path);
  return path;
}

std::string gzip(const uint8_t* data, std::size_t size) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fail("deflateInit2");
  std::string out(deflateBound(&z, static_cast<uLong>(size)) + 32, '\0');
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END)
    fail("deflate did not finish");
  return out;
}

}  // namespace troupe::fuzz
