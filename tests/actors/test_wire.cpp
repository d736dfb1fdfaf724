// Tensors on the wire: what one process writes another reads back bit for bit, and bytes that
// do not add up are refused before anything is allocated.
#include "messages/tensor_wire.hpp"
#include "messages/type_ids.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/expected.hpp>

#include <cstring>
#include <vector>

using namespace troupe;

namespace {

std::vector<char> encode(at::Tensor t) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  REQUIRE_FALSE(inspect(sink, t));
  return buf;
}

caf::expected<at::Tensor> decode(const std::vector<char>& buf) {
  caf::binary_deserializer source{nullptr, buf};
  at::Tensor t;
  if (auto err = inspect(source, t))
    return err;
  return t;
}

// Hand-made header: code, rank, dims, byte count, then `payload` bytes.
std::vector<char> header(uint8_t code, std::vector<int64_t> dims, uint64_t bytes,
                         std::size_t payload) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  REQUIRE_FALSE(sink(code, static_cast<uint8_t>(dims.size())));
  for (auto d : dims)
    REQUIRE_FALSE(sink(d));
  REQUIRE_FALSE(sink(bytes));
  buf.resize(buf.size() + payload, '\x7f');
  return buf;
}

std::string refusal(const std::vector<char>& buf) {
  auto r = decode(buf);
  REQUIRE_FALSE(r);
  return caf::to_string(r.error());
}

}  // namespace

TEST_SUITE("wire") {
  TEST_CASE("tensors round-trip bit for bit: dtypes, views, empty, scalar, undefined") {
    at::manual_seed(3);
    const std::vector<at::Tensor> cases = {
        at::randn({3, 4}),     at::randn({5}, at::kDouble), at::arange(10, at::kLong),
        at::randn({4, 6}).t(),  // a non-contiguous view travels compacted
        at::empty({0, 7}),     at::scalar_tensor(2.5),      at::randint(0, 2, {9}).to(at::kBool),
    };
    for (const auto& t : cases) {
      auto back = decode(encode(t));
      REQUIRE(back);
      CHECK((back->scalar_type() == t.scalar_type()));
      CHECK((back->sizes() == t.sizes()));
      CHECK(at::equal(*back, t));
    }
    auto undefined = decode(encode(at::Tensor()));
    REQUIRE(undefined);
    CHECK_FALSE(undefined->defined());
  }

  TEST_CASE("a header that does not add up is refused, naming what is wrong") {
    CHECK(refusal(header(99, {2}, 8, 8)).find("unknown dtype code 99") != std::string::npos);
    CHECK(refusal(header(1, std::vector<int64_t>(17, 1), 4, 4)).find("17 dimensions") !=
          std::string::npos);
    CHECK(refusal(header(1, {-2}, 8, 8)).find("negative dimension") != std::string::npos);
    CHECK(refusal(header(1, {2, 3}, 20, 24)).find("promises 20 bytes but the shape holds 24") !=
          std::string::npos);
    // A shape of 2^62 elements is refused from the header, not by trying to allocate it.
    CHECK(refusal(header(1, {int64_t{1} << 31, int64_t{1} << 31}, 0, 0)).find("larger than") !=
          std::string::npos);
    // Fewer bytes than promised: refused before allocating the promised 1 GiB.
    CHECK(refusal(header(1, {int64_t{1} << 28}, uint64_t{1} << 30, 16)).find("holds 16") !=
          std::string::npos);
    // Cut inside the header itself.
    auto cut = encode(at::ones({4}));
    cut.resize(5);
    CHECK_FALSE(decode(cut));
  }

  TEST_CASE("a dtype without a wire code cannot be sent") {
    std::vector<char> buf;
    caf::binary_serializer sink{nullptr, buf};
    at::Tensor t = at::ones({2}, at::kComplexFloat);
    CHECK(inspect(sink, t));
  }

  TEST_CASE("to_string shows the shape, never the data") {
    CHECK(wire::describe(at::ones({2, 3})) == "float[2,3]");
    CHECK(wire::describe(at::Tensor()) == "undefined");
  }
}
