// The frames of CAF 0.17's BASP protocol as a guarded connection sees them arrive: a 32-byte
// header, then the payload it announces. CAF delivers a message frame to the actor it names
// with the message id it carries, whoever sent it: its mailbox files the message by the id's
// category before any handler (or troupe's trusted_nodes check) sees it, and files a message
// claiming the stream categories by reading stream content the message does not hold. One
// 40-byte frame from a stranger, after CAF's handshake (which needs no token), crashed the
// coordinator so. troupe sends no CAF streams: a frame claiming them closes its connection.
#pragma once

#include <caf/node_id.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace troupe {

/// Bytes in a BASP header (caf::io::basp::header_size).
constexpr std::size_t basp_header_bytes = 32;

struct basp_header_view {
  uint8_t operation = 0;
  uint32_t payload_bytes = 0;
  uint64_t operation_data = 0;  ///< a message frame's message id
};

/// The fields troupe checks, decoded from the header's network byte order.
basp_header_view read_basp_header(const unsigned char* header);

/// Why a frame with `header` must not reach CAF ("" when it may).
std::string basp_frame_problem(const basp_header_view& header);

/// Tells headers from payloads in the bytes a connection delivers, as CAF reads them.
class basp_frame_reader {
 public:
  /// `bytes` is the next piece CAF asked for; returns why the connection must close, or "".
  std::string next(const unsigned char* bytes, std::size_t size);
  /// The node the peer's client handshake named, once its payload was read (none before, or
  /// when it could not be read: CAF then drops the connection itself).
  const caf::node_id& handshake_node() const { return node_; }

 private:
  bool header_next_ = true;
  uint8_t operation_ = 0;  ///< of the header whose payload comes next
  caf::node_id node_;
};

}  // namespace troupe
