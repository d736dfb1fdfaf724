// lr_rates JOB.json T: prints the learning rate of optimizer steps 0..T-1 of a run of T steps as
// a JSON array at full precision, for tests/python/check_lr_schedules.py to compare with
// PyTorch's lr_scheduler.
#include "core/config/parse_job.hpp"
#include "core/optim/lr_schedule.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: lr_rates JOB.json STEPS\n");
    return 2;
  }
  try {
    const auto job = troupe::parse_job(troupe::read_json_file(argv[1]));
    const long long total = std::stoll(argv[2]);
    if (total < 1) {
      std::fprintf(stderr, "lr_rates: STEPS must be at least 1, got %lld\n", total);
      return 2;
    }
    std::printf("[");
    for (long long s = 0; s < total; ++s)
      std::printf("%s%.17g", s == 0 ? "" : ",", troupe::learning_rate(job.optimizer, s, total));
    std::printf("]\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lr_rates: %s\n", e.what());
    return 1;
  }
  return 0;
}
