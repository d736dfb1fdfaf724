#include "core/model/random_draws.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>

namespace troupe {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t draw_seed(uint64_t job_seed, int64_t worker, int64_t step, int64_t part) {
  uint64_t h = splitmix64(job_seed);
  for (const auto x : {worker, step, part})
    h = splitmix64(h ^ static_cast<uint64_t>(x));
  return h;
}

std::mutex& generator_lock() {
  static std::mutex lock;
  return lock;
}

seeded_draws::seeded_draws(uint64_t seed) : hold_(generator_lock()) {
  auto generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> inner(generator.mutex());
  generator.set_current_seed(seed);
}

}  // namespace troupe
