// Exceptions that core/ throws for bad input. Each carries a message that names what is wrong
// and where (a JSON path, a file name); apps/ maps them to exit codes (job_error -> 2,
// data_error -> 1) and actors/ turn them into caf::error values at their boundary.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace troupe {

/// A job file or command line that cannot be used. Holds every problem found, not just the
/// first, so that a user fixes them all in one go.
class job_error : public std::runtime_error {
 public:
  explicit job_error(std::vector<std::string> problems);
  const std::vector<std::string>& problems() const noexcept { return problems_; }

 private:
  std::vector<std::string> problems_;
};

/// A data file that is missing, truncated or malformed. The message names the file.
class data_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A message or event that breaks a protocol (a chunk for a round that is over, a gradient for
/// the wrong step). Actors turn it into errc::protocol_error at their boundary.
class protocol_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A file of the run's output folder could not be written (a full disk, most often). The
/// message names the file and the system's reason.
class output_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Training produced a non-finite loss: continuing would only spread NaNs into every replica.
class diverged_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What `e` says, for a person: a LibTorch error (c10::Error) without the C++ stack frames its
/// what() carries.
std::string message_of(const std::exception& e);

}  // namespace troupe
