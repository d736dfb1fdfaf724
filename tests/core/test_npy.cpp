// NumPy arrays as data: the .npy header reader on every format version and on lying, cut and
// hostile headers; rows gathered from memory-mapped shards (uint8 scaled, float16 widened), a
// held-out validation set that copies nothing, and a NaN row named when a step reads it.
#include "core/data/data_source.hpp"
#include "core/data/npy_header.hpp"
#include "core/data/row_column.hpp"
#include "core/data/validation_split.hpp"
#include "core/errors.hpp"
#include "data_error_text.hpp"
#include "temp_folder.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

#include <cstring>
#include <string>

using namespace troupe;

namespace {

// A .npy file as numpy.save writes it: magic, version, header length, the dict padded with
// spaces to a multiple of 64 bytes and ended by a newline, then the data.
std::string npy(const std::string& dict, const std::string& data, int major = 1) {
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  const auto prefix = 6 + 2 + length_bytes;
  while ((prefix + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < length_bytes; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

template <typename T>
std::string bytes_of(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

npy_header parse(const std::string& file) {
  return parse_npy_header("a.npy", reinterpret_cast<const unsigned char*>(file.data()),
                          file.size());
}

std::string header_error(const std::string& file) {
  return error_of([&] { parse(file); });
}

}  // namespace

TEST_SUITE("data") {
  TEST_CASE("an .npy header of each version gives the type, the shape and where the rows start") {
    const auto data = bytes_of(std::vector<float>(12, 1.5f));
    for (int major : {1, 2, 3}) {
      const auto file = npy(dict("<f4", "(3, 2, 2)"), data, major);
      const auto h = parse(file);
      CHECK(h.dtype == npy_dtype::float32);
      CHECK(h.shape == std::vector<int64_t>{3, 2, 2});
      CHECK(h.data_offset == file.size() - data.size());
      CHECK(h.data_offset % 64 == 0);
      CHECK(h.row_bytes == 16);
      CHECK(h.data_bytes == 48);
    }
    // Keys in any order, a one-element tuple, double quotes, Python 2's long suffix.
    CHECK(parse(npy("{\"shape\": (4L,), 'fortran_order': False, 'descr': '<i8'}",
                    bytes_of(std::vector<int64_t>(4))))
              .shape == std::vector<int64_t>{4});
    CHECK(parse(npy(dict("|u1", "(2, 3)"), std::string(6, '\0'))).dtype == npy_dtype::uint8);
    CHECK(parse(npy(dict("<f2", "(2,)"), std::string(4, '\0'))).dtype == npy_dtype::float16);
  }

  TEST_CASE("a header that lies, is cut, or holds what troupe cannot read names the file and why") {
    const auto rows = bytes_of(std::vector<float>(12));
    CHECK(contains(header_error(npy(dict("<f4", "(3, 4)"), rows.substr(0, 40))),
                   "a.npy: truncated: its header declares float32 (3, 4), 48 bytes, and the file "
                   "holds 40 after the header"));
    CHECK(contains(header_error(npy(dict("<f4", "(2, 4)"), rows)),
                   "a.npy: holds 48 bytes after its header, which declares float32 (2, 4) of 32 "
                   "bytes"));
    CHECK(contains(header_error("PK\x03\x04 a zip file"), "a.npy: not a .npy file"));
    CHECK(contains(header_error(npy(dict("<f4", "(3, 4)"), rows).substr(0, 30)),
                   "truncated inside its header"));
    CHECK(contains(header_error(npy(dict("<f4", "(3, 4)"), rows, 4)), "format version 4.0"));
    CHECK(
        contains(header_error(npy(dict(">f4", "(3, 4)"), rows)), "holds dtype '>f4' (big-endian"));
    CHECK(contains(header_error(npy(dict("<c8", "(3, 2)"), rows)), "holds dtype '<c8'"));
    CHECK(contains(header_error(npy(dict("<f4", "(3, 4)", true), rows)), "Fortran-order"));
    CHECK(contains(header_error(npy(dict("<f4", "()"), rows.substr(0, 4))), "a single value"));
    CHECK(contains(header_error(npy(dict("<f4", "(0, 4)"), "")), "a.npy: has 0 rows"));
    CHECK(contains(header_error(npy(dict("<f4", "(3, 0)"), "")), "its rows hold no values"));
    CHECK(contains(header_error(npy("{'descr': '<f4', 'shape': (3, 4)}", rows)),
                   "its header has no 'fortran_order'"));
    CHECK(contains(
        header_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': [3, 4]}", rows)),
        "a string, True, False or a tuple expected"));
    // Dimensions whose product overflows, or that overflow themselves: refused, not wrapped.
    CHECK(contains(header_error(npy(dict("<f4", "(4294967296, 4294967296, 16)"), rows)),
                   "more bytes than any file holds"));
    CHECK(contains(header_error(npy(dict("<f4", "(99999999999999999999,)"), rows)),
                   "a dimension too large"));
    // A header length beyond the file.
    auto cut = npy(dict("<f4", "(3, 4)"), rows);
    cut[8] = '\xff';
    cut[9] = '\x7f';
    CHECK(contains(header_error(cut), "truncated inside its header (32767 bytes declared"));
  }

  TEST_CASE("rows gathered from mapped shards are the stored rows, scaled and widened") {
    temp_folder t;
    // Rows r of 2 values (r, r + 0.5) over two float16 shards of 3 and 2 rows.
    std::vector<at::Half> first, second;
    for (int r = 0; r < 5; ++r)
      for (float v : {float(r), r + 0.5f})
        (r < 3 ? first : second).push_back(at::Half(v));
    t.write("x0.npy", npy(dict("<f2", "(3, 2)"), bytes_of(first)));
    t.write("x1.npy", npy(dict("<f2", "(2, 2)"), bytes_of(second)));
    t.write("y.npy", npy(dict("<i4", "(5,)"), bytes_of(std::vector<int32_t>{0, 1, 2, 1, 0})));
    t.write("xt.npy", npy(dict("|u1", "(2, 2)"), std::string("\x00\xff\x33\x66", 4)));
    t.write("yt.npy", npy(dict("<i8", "(2,)"), bytes_of(std::vector<int64_t>{2, 0})));
    data_config config;
    config.kind = data_kind::npy;
    config.train_arrays = {{(t.path / "x0.npy").string(), (t.path / "x1.npy").string()},
                           {(t.path / "y.npy").string()}};
    config.test_arrays = {{(t.path / "xt.npy").string()}, {(t.path / "yt.npy").string()}};
    const auto data = load_dataset(config, 7);
    CHECK(data->train.images.mapped());
    CHECK(data->train.size() == 5);
    CHECK(data->classes == 3);
    CHECK((data->train.labels.scalar_type() == at::kLong));
    const auto rows = data->train.images.gather(at::tensor({4, 0, 3}, at::kLong));
    CHECK((rows.scalar_type() == at::kFloat));
    CHECK(at::equal(rows, at::tensor({4.f, 4.5f, 0.f, 0.5f, 3.f, 3.5f}).view({3, 2})));
    CHECK(
        at::equal(data->train.images.range(2, 2), at::tensor({2.f, 2.5f, 3.f, 3.5f}).view({2, 2})));
    CHECK(at::allclose(data->test.images.whole(), at::tensor({0.f, 1.f, 0.2f, 0.4f}).view({2, 2})));

    // Held-out validation rows: the same rows as the in-memory split takes, no copy made.
    config.validation = 2;
    const auto split = load_dataset(config, 7);
    CHECK(split->train.images.mapped());
    CHECK(split->validation.images.mapped());
    CHECK(split->train.size() == 3);
    CHECK(split->validation.size() == 2);
    dataset in_memory;
    in_memory.train = {data->train.images.whole(), data->train.labels};
    hold_out_validation(in_memory, 2, 7);
    CHECK(at::equal(split->validation.images.whole(), in_memory.validation.images.whole()));
    CHECK(at::equal(split->train.images.whole(), in_memory.train.images.whole()));
    CHECK(at::equal(split->train.labels, in_memory.train.labels));
  }

  TEST_CASE("a mapped row holding a NaN fails the step that reads it, naming the file and row") {
    temp_folder t;
    std::vector<float> values(8, 1.0f);
    values[5] = std::nanf("");
    t.write("x.npy", npy(dict("<f4", "(4, 2)"), bytes_of(values)));
    t.write("y.npy", npy(dict("<i8", "(4,)"), bytes_of(std::vector<int64_t>{0, 1, 0, 1})));
    data_config config;
    config.kind = data_kind::npy;
    config.train_arrays = {{(t.path / "x.npy").string()}, {(t.path / "y.npy").string()}};
    config.test_arrays = config.train_arrays;
    const auto data = load_dataset(config, 1);
    CHECK_NOTHROW(data->train.images.gather(at::tensor({0, 1, 3}, at::kLong)));
    CHECK_THROWS_WITH_AS(
        data->train.images.gather(at::tensor({0, 2}, at::kLong)),
        ((t.path / "x.npy").string() + ": row 2 holds a NaN or an infinity").c_str(), data_error);
  }
}
