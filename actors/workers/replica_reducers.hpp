// A replica worker's gradient reducers (actors/exchange/gradient_reducer), one per way its
// gradients can meet, and the one place that chooses among them from the plan. Internal to the
// replica worker: they send as the worker and keep its per-epoch state (the ring over actors,
// the socket ring this node formed).
#pragma once

#include "actors/exchange/gradient_reducer.hpp"
#include "actors/workers/replica_worker_state.hpp"

#include <memory>

namespace troupe::replica_internal {

/// The reducer of the worker's membership epoch, chosen from the plan's gradient_meeting: for a
/// ring between processes, the host's shared memory where every node of the run is on this
/// host, else the socket ring this node formed for the epoch, else the ring over actors. Made
/// at the epoch's first sync step (a socket ring is taken over then).
std::unique_ptr<gradient_reducer> make_reducer(self_pointer self);

}  // namespace troupe::replica_internal
