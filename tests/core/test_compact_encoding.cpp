// Compact encodings for a slow link: what packing keeps and drops, that error feedback carries
// the dropped part into the next vector, and that unpack refuses what is not a packed vector.
#include "core/collective/compact_encoding.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>

using namespace troupe;

namespace {

at::Tensor random_vector(int64_t n, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  return at::randn({n}, gen, at::TensorOptions().dtype(at::kFloat));
}

// Overwrites the i64 count at the front of a packed vector.
at::Tensor with_count(at::Tensor packed, int64_t count) {
  packed = packed.clone();
  std::memcpy(packed.data_ptr<uint8_t>(), &count, 8);
  return packed;
}

}  // namespace

TEST_SUITE("compact_encoding") {
  TEST_CASE("packed sizes: 2 bytes a value in bf16, 1 and a scale per block in int8") {
    const int64_t n = 3 * int8_block + 5;  // a partial last block
    const auto x = random_vector(n, 1);
    CHECK(pack(x, compression_kind::bf16).numel() == 9 + 2 * n);
    CHECK(pack(x, compression_kind::int8).numel() == 9 + 4 * 4 + n);
    CHECK(packed_bytes(n, compression_kind::int8) == 9 + 4 * 4 + n);
    CHECK(is_packed(pack(x, compression_kind::int8)));
    CHECK(!is_packed(x));
    CHECK_THROWS_AS(pack(x, compression_kind::none), std::invalid_argument);
  }

  TEST_CASE("unpack gives back every value to within the encoding's precision") {
    const int64_t n = 2 * int8_block + 17;
    auto x = random_vector(n, 2);
    x.narrow(0, 0, int8_block).zero_();  // a block of zeros: scale 0, values exactly 0
    const auto bf = unpack(pack(x, compression_kind::bf16));
    REQUIRE(bf.numel() == n);
    CHECK((bf - x).abs().max().item<float>() <= x.abs().max().item<float>() / 128);
    CHECK(at::equal(bf, x.to(at::kBFloat16).to(at::kFloat)));
    const auto q = unpack(pack(x, compression_kind::int8));
    REQUIRE(q.numel() == n);
    CHECK(at::equal(q.narrow(0, 0, int8_block), x.narrow(0, 0, int8_block)));
    for (int64_t b = 1; b < 3; ++b) {
      const int64_t len = std::min(int8_block, n - b * int8_block);
      const auto xb = x.narrow(0, b * int8_block, len);
      const auto qb = q.narrow(0, b * int8_block, len);
      // Half a step of the block's scale (largest magnitude / 127), and the largest exactly.
      const float scale = xb.abs().max().item<float>() / 127;
      CHECK((qb - xb).abs().max().item<float>() <= scale * 0.5f * 1.0001f);
      const auto top = xb.abs().argmax().item<int64_t>();
      CHECK(qb[top].item<float>() == doctest::Approx(xb[top].item<float>()).epsilon(1e-6));
    }
  }

  TEST_CASE("error feedback: the sum of what was decoded follows the sum of what was given") {
    const int64_t n = int8_block + 100;
    for (auto kind : {compression_kind::bf16, compression_kind::int8}) {
      CAPTURE(to_string(kind));
      error_feedback encoder(kind);
      auto given = at::zeros({n});
      auto decoded = at::zeros({n});
      float one_error = 0;
      for (uint64_t i = 0; i < 50; ++i) {
        // Vectors of varying size, one of them tiny beside the rest: without feedback its
        // small values would round away again and again.
        const auto x = random_vector(n, 10 + i) * (i % 7 == 3 ? 1e-4f : 1.0f);
        given += x;
        decoded += unpack(encoder.encode(x));
        one_error = std::max(one_error, encoder.residual().abs().max().item<float>());
        // What is still owed is exactly the residual (up to float rounding of the sums).
        CHECK(at::allclose(given - decoded, encoder.residual(), 1e-4, 1e-4));
      }
      CHECK((given - decoded).abs().max().item<float>() <= one_error * 1.001f);
      // Without feedback the error of 50 independent roundings adds up.
      auto plain = at::zeros({n});
      for (uint64_t i = 0; i < 50; ++i)
        plain += unpack(pack(random_vector(n, 10 + i) * (i % 7 == 3 ? 1e-4f : 1.0f), kind));
      CHECK((given - plain).abs().max().item<float>() >
            (given - decoded).abs().max().item<float>());
    }
  }

  TEST_CASE("the weights a worker holds: master - held, packed, keeps held within one rounding") {
    // The parameter server's scheme: held += unpack(pack(master - held)) after every change.
    auto master = random_vector(4000, 3);
    auto held = master.clone();
    for (uint64_t i = 0; i < 100; ++i) {
      master -= 0.01f * random_vector(4000, 100 + i);
      const auto packed = pack(master - held, compression_kind::int8);
      held += unpack(packed);
      // Within half a step of the largest change in any block, never drifting away.
      CHECK((master - held).abs().max().item<float>() < 0.03f / 127 * 4);
    }
  }

  TEST_CASE("unpack refuses what is not a packed vector, naming what is wrong") {
    const auto x = random_vector(100, 4);
    const auto good = pack(x, compression_kind::int8);
    CHECK_THROWS_WITH_AS(unpack(x), doctest::Contains("expected a 1-D uint8 tensor, got float"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(unpack(at::Tensor()), doctest::Contains("undefined"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(unpack(good.narrow(0, 0, 5)), doctest::Contains("shorter than its 9-byte"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(unpack(good.narrow(0, 0, good.numel() - 1)),
                         doctest::Contains("the header promises 100 values in int8"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(unpack(with_count(good, -1)), doctest::Contains("promises -1"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(unpack(with_count(good, INT64_MAX)), doctest::Contains("promises"),
                         std::invalid_argument);
    auto bad_code = good.clone();
    bad_code.data_ptr<uint8_t>()[8] = 7;
    CHECK_THROWS_WITH_AS(unpack(bad_code), doctest::Contains("unknown encoding 7"),
                         std::invalid_argument);
    bad_code.data_ptr<uint8_t>()[8] = 0;  // none has no packed form
    CHECK_THROWS_WITH_AS(unpack(bad_code), doctest::Contains("unknown encoding 0"),
                         std::invalid_argument);
    CHECK(at::equal(unpack(good), unpack(good.clone())));
  }
}
