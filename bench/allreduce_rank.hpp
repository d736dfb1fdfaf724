// What every rank process of allreduce_bench shares, whichever transport it times: the lines it
// exchanges with the parent over pipes, its certificate's name, and the timing of its
// all-reduces.
#pragma once

#include "bench/median.hpp"
#include "core/cluster/certs.hpp"

#include <ATen/ATen.h>
#include <stdlib.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace troupe::bench::allreduce {

inline std::string read_line(int fd) {
  std::string line;
  char c = 0;
  while (::read(fd, &c, 1) == 1 && c != '\n')
    line += c;
  return line;
}

inline void write_line(int fd, const std::string& line) {
  const auto text = line + "\n";
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    std::perror("allreduce_bench: write");
}

// Every rank's port, as the parent sends them: one line, separated by spaces.
inline std::vector<uint16_t> read_ports(int fd) {
  std::vector<uint16_t> ports;
  std::istringstream in(read_line(fd));
  for (unsigned p; in >> p;)
    ports.push_back(static_cast<uint16_t>(p));
  return ports;
}

inline std::string rank_name(int64_t rank) {
  return "rank-" + std::to_string(rank);
}

// A CA made for this run and a certificate per rank, in a fresh directory.
inline std::string make_certificates(int64_t ranks) {
  auto dir = (std::filesystem::temp_directory_path() / "allreduce-tls-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr)
    throw std::runtime_error("cannot make a directory for certificates");
  make_authority(dir, 1);
  for (int64_t r = 0; r < ranks; ++r)
    issue_certificate(dir, rank_name(r), 1);
  return dir;
}

// The float32 values in `mb` MiB.
inline int64_t floats_in(double mb) {
  return static_cast<int64_t>(mb * (1 << 20) / 4);
}

// A ring's bucket of `bucket_mb` MiB, in values: at least one.
inline int64_t bucket_of(double bucket_mb) {
  return std::max<int64_t>(1, floats_in(bucket_mb));
}

inline std::vector<int64_t> numels_of(const std::vector<double>& sizes_mb) {
  std::vector<int64_t> numels;
  for (double mb : sizes_mb)
    numels.push_back(floats_in(mb));
  return numels;
}

// Per size: a barrier, then one timed all-reduce of a buffer every rank fills with rank + 1;
// warm-up rounds first; the first round's sum checked. The JSON rows of rank `rank`'s timings.
inline nlohmann::json time_sizes(int64_t rank, int64_t ranks, const std::vector<double>& sizes_mb,
                                 int iters, int warmup,
                                 const std::function<void(std::size_t, at::Tensor&)>& reduce,
                                 const std::function<void()>& barrier) {
  const auto numels = numels_of(sizes_mb);
  auto rows = nlohmann::json::array();
  for (std::size_t k = 0; k < numels.size(); ++k) {
    auto buffer = at::empty({numels[k]});
    std::vector<double> times;
    for (int i = 0; i < warmup + iters; ++i) {
      buffer.fill_(static_cast<float>(rank + 1));
      barrier();  // nobody starts before everyone is ready
      const auto start = std::chrono::steady_clock::now();
      reduce(k, buffer);
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (i == 0) {
        const float want = static_cast<float>(ranks * (ranks + 1) / 2);
        if (!at::all(buffer == want).item<bool>())
          throw std::runtime_error("wrong sum of " + std::to_string(numels[k]) + " elements");
      }
      if (i >= warmup)
        times.push_back(s);
    }
    const double median = bench::median(times);
    const double bytes = static_cast<double>(numels[k]) * 4;
    rows.push_back({{"size_mb", sizes_mb[k]},
                    {"median_s", median},
                    {"times_s", times},
                    {"algbw_gbs", bytes / median / 1e9},
                    {"busbw_gbs", 2.0 * static_cast<double>(ranks - 1) /
                                      static_cast<double>(ranks) * bytes / median / 1e9}});
  }
  return rows;
}

// Runs a rank's `body` and exits: 0 when it returned, 1 (saying why) when it threw.
[[noreturn]] inline void run_rank_body(int64_t rank, const std::function<void()>& body) {
  int code = 1;
  try {
    body();
    code = 0;
  } catch (const std::exception& e) {
    std::cerr << "rank " << rank << ": " << e.what() << "\n";
  }
  std::fflush(nullptr);
  ::_exit(code);
}

}  // namespace troupe::bench::allreduce
