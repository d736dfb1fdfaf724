// The error codes troupe's actors fail with, as a CAF error category. Library exceptions
// (c10::Error from LibTorch, core's exceptions) are converted into these once, at the actor
// boundary (make_error_from_exception), so the run driver can say why a worker died.
#pragma once

#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>

#include <exception>
#include <string>

namespace troupe {

enum class errc : unsigned char {
  /// LibTorch raised an error (shape mismatch, out of memory, ...).
  torch_error = 1,  // codes start at 1: a caf::error with code 0 means "no error"
  /// The loss became NaN or infinite.
  diverged,
  /// A message broke the step protocol (e.g. a gradient for the wrong step).
  protocol_error,
  /// Any other exception.
  internal,
  /// The data cannot be trained on (a non-finite input in a row, a file that changed): the
  /// user's to fix, not troupe's ("internal" said otherwise).
  data,
};

std::string to_string(errc x);

/// Whether `e` is troupe's error `x`.
bool is_error(const caf::error& e, errc x);

/// The one way to say that a message broke a protocol: every actor that checks a message it did
/// not expect ends (or ends the run) with this error, naming what it got and what it expected.
caf::error protocol_violation(std::string what);

/// Converts the exception in flight into an error value carrying its message.
caf::error make_error_from_exception(const std::exception_ptr& ep);

/// Registers the renderer so that actor_system::render(err) prints "troupe::torch_error: ...".
void add_error_category(caf::actor_system_config& cfg);

}  // namespace troupe

CAF_ERROR_CODE_ENUM(troupe::errc, "troupe")
