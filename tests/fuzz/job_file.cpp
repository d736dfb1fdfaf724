// Fuzz target: a job or suite file's text, as `troupe validate FILE` reads it: JSON with
// read_json_file's checks (parse_json_text), then the suite's expansion or the job's validation,
// the job written back and read again, and the plan of every valid job.
#include "core/config/parse_job.hpp"
#include "core/errors.hpp"
#include "tests/fuzz/fuzz_common.hpp"

#include <ATen/Parallel.h>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  at::set_num_threads(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json json;
  try {
    json = troupe::parse_json_text(troupe::fuzz::as_text(data, size), "fuzz.json");
  } catch (const troupe::job_error&) {
    return 0;
  }
  troupe::fuzz::check_job_json(json);
  return 0;
}
