// Data files: the IDX reader on good, truncated, corrupt and hostile files; Fashion-MNIST's
// consistency checks; the real set when Debian's package is installed; synthetic data.
#include "core/data/fashion_mnist.hpp"
#include "core/data/idx_file.hpp"
#include "core/data/synthetic.hpp"
#include "core/errors.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

using namespace troupe;
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> idx_header(std::vector<uint32_t> dims, uint8_t type = 0x08) {
  std::vector<uint8_t> h{0, 0, type, static_cast<uint8_t>(dims.size())};
  for (auto d : dims)
    for (int shift : {24, 16, 8, 0})
      h.push_back(static_cast<uint8_t>(d >> shift));
  return h;
}

void write_gz(const fs::path& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!bytes.empty())
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

std::vector<uint8_t> idx_file(std::vector<uint32_t> dims, size_t data_bytes, uint8_t fill = 1) {
  auto bytes = idx_header(std::move(dims));
  bytes.resize(bytes.size() + data_bytes, fill);
  return bytes;
}

struct temp_folder {
  fs::path path = fs::temp_directory_path() / ("troupe-data-" + std::to_string(::getpid()));
  temp_folder() { fs::create_directories(path); }
  ~temp_folder() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// A small but complete Fashion-MNIST folder: n train and n test images with labels.
void write_fashion(const temp_folder& t, uint32_t n, uint8_t label = 3) {
  for (const char* split : {"train", "t10k"}) {
    write_gz(t / (std::string(split) + "-images-idx3-ubyte.gz"), idx_file({n, 28, 28}, n * 784u));
    write_gz(t / (std::string(split) + "-labels-idx1-ubyte.gz"), idx_file({n}, n, label));
  }
}

}  // namespace

TEST_SUITE("data") {
  TEST_CASE("a good gzipped IDX file reads back its dims and bytes") {
    temp_folder t;
    auto bytes = idx_header({2, 3});
    for (uint8_t i = 0; i < 6; ++i)
      bytes.push_back(i);
    write_gz(t / "a.gz", bytes);
    auto a = read_idx_file(t / "a.gz");
    CHECK(a.dims == std::vector<int64_t>{2, 3});
    CHECK(a.bytes == std::vector<uint8_t>{0, 1, 2, 3, 4, 5});
  }

  TEST_CASE("a missing file is named") {
    CHECK_THROWS_WITH_AS(read_idx_file("/no/such/file.gz"),
                         doctest::Contains("/no/such/file.gz: cannot open"), data_error);
  }

  TEST_CASE("a truncated file says how much was promised and found") {
    temp_folder t;
    write_gz(t / "short.gz", idx_file({10, 28, 28}, 1000));
    CHECK_THROWS_WITH_AS(read_idx_file(t / "short.gz"),
                         doctest::Contains("short.gz: truncated: the header promises 7840"),
                         data_error);
    write_gz(t / "header.gz", {0, 0, 8, 3, 0, 0});
    CHECK_THROWS_WITH_AS(read_idx_file(t / "header.gz"), doctest::Contains("truncated"),
                         data_error);
  }

  TEST_CASE("a corrupt gzip stream is named") {
    temp_folder t;
    write_gz(t / "good.gz", idx_file({100, 28, 28}, 78400, 7));
    std::fstream f(t / "good.gz", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(30);
    const char garbage[64] = "this is not deflate data, it is garbage bytes in the stream!!!";
    f.write(garbage, sizeof garbage);
    f.close();
    CHECK_THROWS_WITH_AS(read_idx_file(t / "good.gz"), doctest::Contains("good.gz: "), data_error);
  }

  TEST_CASE("bad magic, element type and dimension count are refused") {
    temp_folder t;
    write_gz(t / "magic.gz", {1, 2, 8, 1, 0, 0, 0, 1, 0});
    CHECK_THROWS_WITH_AS(read_idx_file(t / "magic.gz"),
                         doctest::Contains("bad magic number 0x01020801"), data_error);
    write_gz(t / "type.gz", idx_header({1}, 0x0D));
    CHECK_THROWS_WITH_AS(read_idx_file(t / "type.gz"), doctest::Contains("element type 0x0d"),
                         data_error);
    write_gz(t / "zero.gz", idx_header({0}));
    CHECK_THROWS_WITH_AS(read_idx_file(t / "zero.gz"), doctest::Contains("size 0"), data_error);
  }

  TEST_CASE("a header promising gigabytes is refused before allocating") {
    temp_folder t;
    write_gz(t / "huge.gz", idx_header({60000, 60000, 28}));
    CHECK_THROWS_WITH_AS(read_idx_file(t / "huge.gz"), doctest::Contains("refusing it as corrupt"),
                         data_error);
  }

  TEST_CASE("trailing bytes are refused") {
    temp_folder t;
    write_gz(t / "long.gz", idx_file({4}, 5));
    CHECK_THROWS_WITH_AS(read_idx_file(t / "long.gz"), doctest::Contains("trailing bytes"),
                         data_error);
  }

  TEST_CASE("fashion_mnist: shapes, normalization, and consistency checks naming the file") {
    temp_folder t;
    write_fashion(t, 5);
    auto d = load_fashion_mnist(t.path.string());
    CHECK(d.train.images.sizes() == at::IntArrayRef({5, 1, 28, 28}));
    CHECK(d.test.labels.sizes() == at::IntArrayRef({5}));
    CHECK(d.train.labels[0].item<int64_t>() == 3);
    CHECK(d.train.images[0][0][0][0].item<float>() ==
          doctest::Approx((1 / 255.0 - fashion_mnist_mean) / fashion_mnist_std));

    write_gz(t / "train-labels-idx1-ubyte.gz", idx_file({4}, 4));
    CHECK_THROWS_WITH_AS(load_fashion_mnist(t.path.string()),
                         doctest::Contains("train-labels-idx1-ubyte.gz: holds 4 labels but"),
                         data_error);
    write_gz(t / "train-labels-idx1-ubyte.gz", idx_file({5}, 5, 12));
    CHECK_THROWS_WITH_AS(load_fashion_mnist(t.path.string()),
                         doctest::Contains("train-labels-idx1-ubyte.gz: label 0 is 12"),
                         data_error);
    write_gz(t / "t10k-images-idx3-ubyte.gz", idx_file({5, 28, 27}, 5 * 28 * 27));
    write_fashion(t, 5);
    write_gz(t / "t10k-images-idx3-ubyte.gz", idx_file({5, 28, 27}, 5 * 28 * 27));
    CHECK_THROWS_WITH_AS(load_fashion_mnist(t.path.string()),
                         doctest::Contains("t10k-images-idx3-ubyte.gz: expected images of 28x28"),
                         data_error);
  }

  TEST_CASE("the real Fashion-MNIST, when Debian's package is installed") {
    const std::string folder = "/usr/share/datasets/fashion-mnist";
    if (!fs::exists(folder)) {
      MESSAGE("skipped: " << folder << " is absent");
      return;
    }
    auto d = load_fashion_mnist(folder);
    CHECK(d.train.size() == 60000);
    CHECK(d.test.size() == 10000);
    CHECK(d.train.labels.min().item<int64_t>() == 0);
    CHECK(d.train.labels.max().item<int64_t>() == 9);
    CHECK(d.train.images.mean().item<double>() == doctest::Approx(0.0).epsilon(0.01));
    CHECK(d.train.images.std().item<double>() == doctest::Approx(1.0).epsilon(0.01));
  }

  TEST_CASE("synthetic data is fixed by its seed") {
    auto a = make_synthetic(64, 16, 1.0, 5);
    auto b = make_synthetic(64, 16, 1.0, 5);
    auto c = make_synthetic(64, 16, 1.0, 6);
    CHECK(at::equal(a.train.images, b.train.images));
    CHECK(at::equal(a.test.labels, b.test.labels));
    CHECK(!at::equal(a.train.images, c.train.images));
    CHECK(!at::equal(a.train.images.narrow(0, 0, 16), a.test.images));
    CHECK(a.train.images.sizes() == at::IntArrayRef({64, 1, 28, 28}));
    CHECK(a.train.labels.max().item<int64_t>() < 10);
  }
}
