// allreduce_bench's rank over troupe's actor ring (actors/exchange/ring_exchange.hpp over CAF's
// middleman on loopback, the path sync training takes between hosts).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace troupe::bench::allreduce {

/// The body of rank `rank`: writes its JSON report (rank 0's carries the timings) and exits. A
/// rank that fails says why and exits at once: unwinding would end the actor system, whose
/// shutdown waits for the ring member's thread forever. `tls_dir`: "" or make_certificates'.
[[noreturn]] void run_rank(int64_t rank, int64_t ranks, const std::vector<double>& sizes_mb,
                           int iters, int warmup, double bucket_mb, int64_t window,
                           const std::string& tls_dir, int to_parent, int from_parent);

}  // namespace troupe::bench::allreduce
