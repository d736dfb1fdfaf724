#include "actors/links/basp_frames.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/io/basp/header.hpp>
#include <caf/io/basp/message_type.hpp>
#include <caf/message_id.hpp>

namespace troupe {
namespace {

static_assert(basp_header_bytes == caf::io::basp::header_size);

uint64_t big_endian(const unsigned char* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i)
    value = value << 8 | p[i];
  return value;
}

}  // namespace

basp_header_view read_basp_header(const unsigned char* header) {
  // operation, two padding bytes, flags, payload_len, operation_data, source and destination.
  basp_header_view view;
  view.operation = header[0];
  view.payload_bytes = static_cast<uint32_t>(big_endian(header + 4, 4));
  view.operation_data = big_endian(header + 8, 8);
  return view;
}

std::string basp_frame_problem(const basp_header_view& header) {
  using caf::io::basp::message_type;
  const auto operation = static_cast<message_type>(header.operation);
  if (operation != message_type::direct_message && operation != message_type::routed_message)
    return "";
  if (caf::message_id(header.operation_data).is_stream_message())
    return "it sent a message claiming to be part of a CAF stream, which troupe never sends";
  return "";
}

std::string basp_frame_reader::next(const unsigned char* bytes, std::size_t size) {
  if (!header_next_ || size != basp_header_bytes) {
    header_next_ = true;  // a payload: a header follows it
    if (operation_ == static_cast<uint8_t>(caf::io::basp::message_type::client_handshake)) {
      caf::binary_deserializer source{nullptr, reinterpret_cast<const char*>(bytes), size};
      caf::node_id node;
      if (!source(node))
        node_ = std::move(node);
    }
    return "";
  }
  const auto header = read_basp_header(bytes);
  header_next_ = header.payload_bytes == 0;
  operation_ = header.operation;
  return basp_frame_problem(header);
}

}  // namespace troupe
