// A point in a worker's device queue after which a tensor it hands to another worker is ready.
// The sender marks its stream as it sends; the receiver's stream waits for the mark, on the
// device, instead of the sender's thread waiting for its whole stream to drain before it sends
// (which leaves the device idle while the next operation is queued). Opaque here: gpu/ makes
// them (a CUDA event) and only gpu/ reads them; a CPU worker makes none.
#pragma once

#include <memory>

namespace troupe {

class ready_mark {
 public:
  virtual ~ready_mark() = default;
};

using ready_mark_ptr = std::shared_ptr<const ready_mark>;

}  // namespace troupe
