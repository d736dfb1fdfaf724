// How every coordinator ends a run, whatever its workers are: a worker that goes down early or
// an exception in the coordinator itself ends the run with a message naming the cause, and the
// run request is always answered. Shared by the data-parallel and the pipeline coordinators.
#pragma once

#include "core/train/run_report.hpp"
#include "core/train/run_tracker.hpp"
#include "messages/error_code.hpp"

#include <caf/all.hpp>

#include <exception>
#include <string>

namespace troupe {

/// Records a failure (if `error` is set) in metrics, answers the run request with `report`, tells
/// every worker to exit and quits. The caller guards against ending twice.
template <class Self, class Workers>
void deliver_and_quit(Self self, run_tracker& tracker, const std::string& error, run_report report,
                      caf::typed_response_promise<run_report>& promise, const Workers& workers) {
  if (!error.empty()) {
    try {
      tracker.record_event({{"event", "failure"}, {"error", error}});
    } catch (const std::exception&) {
      // The run is ending anyway; the caller still gets the error through the report.
    }
  }
  promise.deliver(std::move(report));
  for (const auto& w : workers)
    self->send_exit(w, caf::exit_reason::user_shutdown);
  self->quit();
}

/// A worker that ends before the run finished has failed: `finish(error)` is called with
/// "<describe(address)> failed: <reason>". A bug in the coordinator itself must still answer
/// the run request instead of leaving the caller waiting forever.
template <class Self, class Describe, class Finish>
void end_run_on_failures(Self self, Describe describe, Finish finish) {
  self->set_down_handler([self, describe, finish](caf::down_msg& msg) {
    if (self->state.finished)
      return;
    const auto why = msg.reason ? self->system().render(msg.reason) : "exited early";
    finish(describe(msg.source) + " failed: " + why);
  });
  self->set_exception_handler([self, finish](caf::scheduled_actor*, std::exception_ptr& ep) {
    auto err = make_error_from_exception(ep);
    finish("coordinator failed: " + self->system().render(err));
    return err;
  });
}

}  // namespace troupe
