// What a guarded connection lets through to CAF's BASP broker: frames told apart from payloads
// as CAF reads them, a message frame claiming a CAF stream refused (one such frame from a
// stranger crashed the coordinator), and the node a client handshake names (a connection whose
// node never joins is closed). The header bytes are CAF's own serialization of a header.
#include "actors/links/basp_frames.hpp"

#include <doctest/doctest.h>
#include <caf/binary_serializer.hpp>
#include <caf/io/basp/header.hpp>
#include <caf/message_id.hpp>

#include <vector>

using namespace troupe;
namespace basp = caf::io::basp;

namespace {

std::vector<char> header_bytes(basp::message_type operation, uint32_t payload, uint64_t data) {
  std::vector<char> bytes;
  caf::binary_serializer sink{nullptr, bytes};
  basp::header header{operation, 0, payload, data, 3, 7};
  REQUIRE(!sink(header));
  REQUIRE(bytes.size() == basp_header_bytes);
  return bytes;
}

const unsigned char* raw(const std::vector<char>& bytes) {
  return reinterpret_cast<const unsigned char*>(bytes.data());
}

}  // namespace

TEST_SUITE("wire") {
  TEST_CASE("a BASP header is read as CAF wrote it") {
    const auto bytes = header_bytes(basp::message_type::routed_message, 1234,
                                    caf::make_message_id(42).integer_value());
    const auto view = read_basp_header(raw(bytes));
    CHECK(view.operation == static_cast<uint8_t>(basp::message_type::routed_message));
    CHECK(view.payload_bytes == 1234);
    CHECK(view.operation_data == caf::make_message_id(42).integer_value());
  }

  TEST_CASE("message frames claiming a CAF stream are refused, any other frame passes") {
    const auto normal = caf::make_message_id(9).integer_value();
    const auto urgent = caf::make_message_id(9).with_category(0).integer_value();
    for (const auto operation :
         {basp::message_type::direct_message, basp::message_type::routed_message}) {
      for (const auto ok : {normal, urgent, caf::make_message_id(9).response_id().integer_value()})
        CHECK(basp_frame_problem(read_basp_header(raw(header_bytes(operation, 8, ok)))).empty());
      for (const uint64_t category : {2, 3}) {
        const auto forged = caf::make_message_id(9).with_category(category).integer_value();
        CHECK(basp_frame_problem(read_basp_header(raw(header_bytes(operation, 8, forged)))) ==
              "it sent a message claiming to be part of a CAF stream, which troupe never sends");
      }
    }
    // A handshake's operation data is the protocol version, not a message id.
    CHECK(basp_frame_problem(read_basp_header(raw(header_bytes(basp::message_type::client_handshake,
                                                               8, uint64_t{3} << 60))))
              .empty());
  }

  TEST_CASE("headers are told from payloads as CAF reads them, a payload of 32 bytes included") {
    basp_frame_reader reader;
    const auto forged = caf::make_message_id(1).with_category(3).integer_value();
    const auto forged_header = header_bytes(basp::message_type::direct_message, 32, forged);
    const auto good_header = header_bytes(basp::message_type::direct_message, 32, 1);
    const auto empty_header = header_bytes(basp::message_type::heartbeat, 0, 0);
    CHECK(reader.next(raw(good_header), 32).empty());
    // Its payload, 32 bytes that would read as a forged header: not a header.
    CHECK(reader.next(raw(forged_header), 32).empty());
    CHECK(reader.next(raw(empty_header), 32).empty());  // no payload: a header follows
    CHECK(!reader.next(raw(forged_header), 32).empty());
  }

  TEST_CASE("the node a client handshake names is read from its payload") {
    const auto node = caf::make_node_id(4242, "0123456789abcdef0123456789abcdef01234567");
    REQUIRE(node);
    std::vector<char> payload;
    caf::binary_serializer sink{nullptr, payload};
    REQUIRE(!sink(*node));
    basp_frame_reader reader;
    CHECK(!reader.handshake_node());
    const auto header = header_bytes(basp::message_type::client_handshake,
                                     static_cast<uint32_t>(payload.size()), 3);
    CHECK(reader.next(raw(header), header.size()).empty());
    CHECK(!reader.handshake_node());
    CHECK(reader.next(raw(payload), payload.size()).empty());
    CHECK(reader.handshake_node() == *node);
    // Garbage in a handshake's payload names no node (CAF drops such a connection itself).
    basp_frame_reader other;
    CHECK(other.next(raw(header), header.size()).empty());
    const std::vector<char> garbage(payload.size(), '\x7f');
    CHECK(other.next(raw(garbage), garbage.size()).empty());
    CHECK(!other.handshake_node());
  }
}
