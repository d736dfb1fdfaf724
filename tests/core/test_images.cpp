// Image folders as data: PNG and JPEG decoded by libpng and libjpeg-turbo (cut, corrupt and
// foreign bytes refused with the reason), torchvision's ImageFolder listing (sorted classes,
// nested files, any-case extensions, empty class folders refused), images brought to size, bad
// images failing the load or left out and counted, and augmentation drawn from (seed, step, row).
#include "core/data/data_source.hpp"
#include "core/data/image_decode.hpp"
#include "core/data/image_folder.hpp"
#include "core/errors.hpp"
#include "core/io/scratch_mapping.hpp"
#include "data_error_text.hpp"
#include "temp_folder.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <png.h>
#include <turbojpeg.h>

#include <cstring>

using namespace troupe;
namespace fs = std::filesystem;

namespace {

// A gray or RGB image whose pixel (y, x, c) is (y * 7 + x * 3 + c * 50) % 256.
std::vector<uint8_t> pattern(int height, int width, int channels) {
  std::vector<uint8_t> pixels;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c)
        pixels.push_back(static_cast<uint8_t>((y * 7 + x * 3 + c * 50) % 256));
  return pixels;
}

// A PNG of height x width pixels `pixels` in libpng's 8-bit `format` (a PNG_FORMAT_*).
std::string png_written(png_uint_32 format, int height, int width, const void* pixels) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = format;
  png_alloc_size_t size = 0;
  REQUIRE(png_image_write_to_memory(&image, nullptr, &size, 0, pixels, 0, nullptr));
  std::string out(size, '\0');
  REQUIRE(png_image_write_to_memory(&image, out.data(), &size, 0, pixels, 0, nullptr));
  out.resize(size);
  return out;
}

std::string png_of(const std::vector<uint8_t>& pixels, int height, int width, int channels) {
  return png_written(channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB, height, width,
                     pixels.data());
}

// A PNG of one pixel in libpng's 8-bit `format`, its samples `values`.
std::string one_pixel_png(png_uint_32 format, const std::vector<uint8_t>& values) {
  return png_written(format, 1, 1, values.data());
}

std::string jpeg_of(const std::vector<uint8_t>& pixels, int height, int width, int channels) {
  tjhandle handle = tjInitCompress();
  unsigned char* bytes = nullptr;
  unsigned long size = 0;
  REQUIRE(tjCompress2(handle, pixels.data(), width, 0, height, channels == 1 ? TJPF_GRAY : TJPF_RGB,
                      &bytes, &size, channels == 1 ? TJSAMP_GRAY : TJSAMP_444, 95, 0) == 0);
  std::string out(reinterpret_cast<char*>(bytes), size);
  tjFree(bytes);
  tjDestroy(handle);
  return out;
}

// A class folder per entry of `counts`, named class_<i>, of 8 x 8 gray PNGs.
void write_folder(const fs::path& root, const std::vector<int>& counts) {
  for (std::size_t c = 0; c < counts.size(); ++c) {
    fs::create_directories(root / ("class_" + std::to_string(c)));
    for (int i = 0; i < counts[c]; ++i) {
      auto pixels = pattern(8, 8, 1);
      pixels[0] = static_cast<uint8_t>(c * 40 + static_cast<std::size_t>(i));
      std::ofstream(root / ("class_" + std::to_string(c)) / ("img" + std::to_string(i) + ".png"),
                    std::ios::binary)
          << png_of(pixels, 8, 8, 1);
    }
  }
}

data_config folders(const temp_folder& t) {
  data_config config;
  config.kind = data_kind::image_folder;
  config.train_file = (t.path / "train").string();
  config.test_file = (t.path / "test").string();
  config.image.size = {8, 8};
  config.image.channels = 1;
  return config;
}

std::string load_error(const data_config& config) {
  return error_of([&] { load_dataset(config, 1); });
}

}  // namespace

TEST_SUITE("data") {
  TEST_CASE("PNG pixels as torchvision's loader has them: alpha dropped, PIL's gray") {
    // Half-transparent white stays white (it was composited onto black: 186 after gamma).
    auto d = decode_image(one_pixel_png(PNG_FORMAT_RGBA, {255, 255, 255, 128}), 3);
    REQUIRE(d.error.empty());
    CHECK(d.pixels == std::vector<uint8_t>{255, 255, 255});
    // A fully transparent pixel keeps its colour.
    d = decode_image(one_pixel_png(PNG_FORMAT_GA, {200, 0}), 1);
    REQUIRE(d.error.empty());
    CHECK(d.pixels == std::vector<uint8_t>{200});
    // Pure red in one channel: PIL's L = (19595 R + 38470 G + 7471 B + 2^15) >> 16 = 76.
    d = decode_image(one_pixel_png(PNG_FORMAT_RGB, {255, 0, 0}), 1);
    REQUIRE(d.error.empty());
    CHECK(d.pixels == std::vector<uint8_t>{76});
  }

  TEST_CASE("PNG and JPEG decode to their pixels, in the channels asked for") {
    const auto gray = pattern(5, 6, 1);
    const auto png = decode_image(png_of(gray, 5, 6, 1), 1);
    REQUIRE(png.error.empty());
    CHECK(png.height == 5);
    CHECK(png.width == 6);
    CHECK(png.pixels == gray);
    const auto widened = decode_image(png_of(gray, 5, 6, 1), 3);
    REQUIRE(widened.error.empty());
    CHECK(widened.pixels.size() == 90);
    CHECK(widened.pixels[3 * 7 + 2] == gray[7]);  // gray copied to every channel

    const auto rgb = pattern(16, 16, 3);
    const auto jpeg = decode_image(jpeg_of(rgb, 16, 16, 3), 3);
    REQUIRE(jpeg.error.empty());
    CHECK(jpeg.height == 16);
    CHECK(jpeg.channels == 3);
    int64_t worst = 0;  // lossy, but close at quality 95
    for (std::size_t i = 0; i < rgb.size(); ++i)
      worst = std::max<int64_t>(worst, std::abs(int(rgb[i]) - int(jpeg.pixels[i])));
    CHECK(worst < 40);
    CHECK(decode_image(jpeg_of(rgb, 16, 16, 3), 1).pixels.size() == 256);

    // A CMYK JPEG is sound: said so, not called corrupt.
    tjhandle handle = tjInitCompress();
    unsigned char* bytes = nullptr;
    unsigned long size = 0;
    const std::vector<uint8_t> cmyk(16 * 16 * 4, 100);
    REQUIRE(tjCompress2(handle, cmyk.data(), 16, 0, 16, TJPF_CMYK, &bytes, &size, TJSAMP_444, 95,
                        0) == 0);
    const std::string cmyk_jpeg(reinterpret_cast<char*>(bytes), size);
    tjFree(bytes);
    tjDestroy(handle);
    CHECK(contains(decode_image(cmyk_jpeg, 3).error, "a CMYK JPEG: troupe decodes gray and color"));
  }

  TEST_CASE("cut, corrupt and foreign bytes are refused with the reason, never decoded") {
    const auto png = png_of(pattern(32, 32, 1), 32, 32, 1);
    const auto jpeg = jpeg_of(pattern(32, 32, 3), 32, 32, 3);
    CHECK(contains(decode_image(png.substr(0, png.size() / 2), 1).error, "a corrupt PNG"));
    CHECK(contains(decode_image(jpeg.substr(0, jpeg.size() / 2), 3).error, "a corrupt JPEG"));
    CHECK(contains(decode_image("GIF89a and so on", 3).error, "neither a PNG nor a JPEG"));
    CHECK(contains(decode_image("", 3).error, "neither a PNG nor a JPEG"));
    auto flipped = jpeg;
    for (std::size_t i = flipped.size() / 3; i < flipped.size() / 3 + 64; ++i)
      flipped[i] = static_cast<char>(~flipped[i]);
    const auto damaged = decode_image(flipped, 3);
    CHECK((!damaged.error.empty() || damaged.pixels.size() == 32 * 32 * 3));
    // A PNG header that claims 100000 x 100000 pixels is refused before any allocation.
    auto huge = png;
    for (int at : {16, 20}) {  // IHDR's width and height, big-endian
      huge[at] = 0, huge[at + 1] = 1, huge[at + 2] = static_cast<char>(0x86),
      huge[at + 3] = static_cast<char>(0xa0);
    }
    CHECK(!decode_image(huge, 1).error.empty());
  }

  TEST_CASE("a folder is listed as ImageFolder lists it: sorted classes, their images sorted") {
    temp_folder t;
    const auto root = t.path / "set";
    for (const auto* folder : {"b_shirt/deeper", "a_coat", "c_bag"})
      fs::create_directories(root / folder);
    for (const auto* file : {"b_shirt/2.png", "b_shirt/10.JPG", "b_shirt/deeper/1.jpeg",
                             "a_coat/x.png", "c_bag/y.PNG", "c_bag/notes.txt"})
      t.write("set/" + std::string(file), "x");
    t.write("set/loose.png", "x");  // not in a class folder: not a sample
    const auto listing = list_image_folder(root.string());
    CHECK(listing.classes == std::vector<std::string>{"a_coat", "b_shirt", "c_bag"});
    std::vector<std::string> names;
    for (const auto& f : listing.files)
      names.push_back(fs::relative(f, root).string());
    CHECK(names == std::vector<std::string>{"a_coat/x.png", "b_shirt/10.JPG", "b_shirt/2.png",
                                            "b_shirt/deeper/1.jpeg", "c_bag/y.PNG"});
    CHECK(listing.labels == std::vector<int64_t>{0, 1, 1, 1, 2});

    fs::create_directories(root / "d_empty");
    t.write("set/d_empty/readme.txt", "x");
    CHECK_THROWS_WITH_AS(list_image_folder(root.string()),
                         ((root / "d_empty").string() +
                          ": a class folder without images (.png, .jpg or .jpeg); remove it or "
                          "add its images")
                             .c_str(),
                         data_error);
    fs::create_directories(t.path / "flat");
    CHECK_THROWS_AS(list_image_folder((t.path / "flat").string()), data_error);
    CHECK_THROWS_AS(list_image_folder((t.path / "missing").string()), data_error);
  }

  TEST_CASE("links in a loop are named, never walked until the system gives up") {
    temp_folder t;
    const auto root = t.path / "set";
    fs::create_directories(root / "a");
    t.write("set/a/1.png", "x");
    // A link back to its own folder: each level down would list 1.png again.
    fs::create_directory_symlink(".", root / "a" / "again");
    CHECK_THROWS_WITH_AS(list_image_folder(root.string()),
                         ((root / "a" / "again").string() +
                          ": a link back to a folder already listed (a loop of links, or two "
                          "links to one folder)")
                             .c_str(),
                         data_error);
    fs::remove(root / "a" / "again");
    // A link to itself, as a class folder and inside one: it leads nowhere.
    fs::create_symlink("itself", root / "itself");
    CHECK(contains(error_of([&] { list_image_folder(root.string()); }),
                   (root / "itself").string() + ": cannot be read ("));
    fs::remove(root / "itself");
    fs::create_symlink("self.png", root / "a" / "self.png");
    CHECK(contains(error_of([&] { list_image_folder(root.string()); }),
                   (root / "a" / "self.png").string() + ": cannot be read ("));
    fs::remove(root / "a" / "self.png");
    // A link to a folder elsewhere is followed, once.
    fs::create_directories(t.path / "elsewhere");
    t.write("elsewhere/2.png", "x");
    fs::create_directory_symlink(t.path / "elsewhere", root / "a" / "more");
    CHECK(list_image_folder(root.string()).files.size() == 2);
  }

  TEST_CASE("an image too narrow to crop, or a file too large for an image, fails alone") {
    temp_folder t;
    write_folder(t.path / "train", {2, 2});
    write_folder(t.path / "test", {1, 1});
    auto config = folders(t);
    config.image.center_crop = true;
    config.image.size = {16, 16};
    // 1 x 600000 pixels cover 16 x 16 only at 16 x 9600000, more than 2^26: refused before
    // resizing (at 1 x 1000000 and 64 x 64 resizing asked for 49 GB and aborted troupe).
    std::ofstream(t.path / "train/class_0/thin.png", std::ios::binary)
        << png_of(pattern(1, 600000, 1), 1, 600000, 1);
    const auto thin = (t.path / "train/class_0/thin.png").string();
    CHECK(contains(load_error(config), thin + ": 1 x 600000 pixels (height x width) are too "
                                              "narrow to crop to 16 x 16: scaled to cover it, the "
                                              "image would be 16 x 9600000"));
    config.skip_bad_images = true;
    CHECK(load_dataset(config, 1)->train.size() == 4);
    config.skip_bad_images = false;
    fs::remove(thin);
    // A sparse file of 2 GiB named .png is refused by its size, before it is read.
    const auto big = (t.path / "train/class_1/big.png").string();
    std::ofstream(big, std::ios::binary).close();
    fs::resize_file(big, std::uintmax_t{2} << 30);
    CHECK(contains(load_error(config), big + ": 2147483648 bytes, more than the 1073741824 such a "
                                             "file may hold (an image of at most 2^26 pixels)"));
  }

  TEST_CASE("folders load as uint8 rows brought to size; bad images fail or are left out") {
    temp_folder t;
    write_folder(t.path / "train", {3, 2});
    write_folder(t.path / "test", {1, 1});
    auto config = folders(t);
    config.image.size = {4, 4};
    const auto data = load_dataset(config, 1);
    CHECK(data->classes == 2);
    CHECK(data->train.size() == 5);
    CHECK(data->train.images.row_shape() == std::vector<int64_t>{1, 4, 4});
    CHECK(at::equal(data->train.labels, at::tensor({0, 0, 0, 1, 1}, at::kLong)));
    const auto rows = data->train.images.whole();
    CHECK(rows.min().item<float>() >= 0.0f);
    CHECK(rows.max().item<float>() <= 1.0f);

    // Normalization per channel, as the job states it.
    config.image.mean = {0.5};
    config.image.std = {0.25};
    const auto normalized = load_dataset(config, 1)->train.images.whole();
    CHECK(at::allclose(normalized, (rows - 0.5) / 0.25));

    t.write("train/class_1/broken.png", "\x89PNG\r\n\x1a\n and then nothing");
    const auto broken = (t.path / "train/class_1/broken.png").string();
    CHECK(contains(load_error(config), broken + ": not a readable PNG"));
    CHECK(contains(load_error(config), "data.bad_images \"skip\""));
    config.skip_bad_images = true;
    const auto skipped = load_dataset(config, 1);
    CHECK(skipped->train.size() == 5);
    REQUIRE(skipped->skipped.size() == 1);
    CHECK(contains(skipped->skipped[0], broken));
    CHECK(facts_of(*skipped).skipped_rows == 1);

    fs::rename(t.path / "test/class_1", t.path / "test/class_2");
    CHECK(contains(load_error(config), "holds the classes class_0, class_2, the training folder"));
  }

  TEST_CASE("decoded into a scratch file (cache \"disk\"): the same rows, nothing left behind") {
    temp_folder t;
    write_folder(t.path / "train", {3, 2});
    write_folder(t.path / "test", {1, 1});
    t.write("train/class_0/broken.png", "not a PNG at all");  // left out: the rows move up
    auto config = folders(t);
    config.image.size = {4, 4};
    config.skip_bad_images = true;
    const auto in_memory = load_dataset(config, 1);
    fs::create_directories(t.path / "cache");
    config.image.cache_on_disk = true;
    config.image.cache_dir = (t.path / "cache").string();
    {
      const auto on_disk = load_dataset(config, 1);
      CHECK(on_disk->train.size() == 5);
      CHECK(at::equal(on_disk->train.images.whole(), in_memory->train.images.whole()));
      CHECK(at::equal(on_disk->train.labels, in_memory->train.labels));
      CHECK(at::equal(on_disk->test.images.whole(), in_memory->test.images.whole()));
      CHECK(fs::is_empty(t.path / "cache"));  // unlinked while mapped
    }
    config.image.cache_dir = (t.path / "nowhere").string();
    CHECK(contains(load_error(config), (t.path / "nowhere").string() + ": cannot hold scratch"));
    const auto bytes = scratch_bytes({3, 5}, (t.path / "cache").string());
    CHECK(bytes.is_contiguous());
    CHECK(bytes.sizes().vec() == std::vector<int64_t>{3, 5});
    CHECK_THROWS_WITH_AS(scratch_bytes({int64_t{1} << 50}, (t.path / "cache").string()),
                         doctest::Contains("MB free, the decoded images need"), data_error);
  }

  TEST_CASE("augmentation is drawn from (seed, step, row): the same each time, none to evaluate") {
    temp_folder t;
    write_folder(t.path / "train", {4, 4});
    write_folder(t.path / "test", {1, 1});
    auto config = folders(t);
    config.augment.random_crop_padding = 2;
    config.augment.horizontal_flip = true;
    const auto data = load_dataset(config, 3);
    const auto index = at::arange(8, at::kLong);
    const auto plain = data->train.images.gather(index);
    CHECK(at::equal(plain, data->train.images.whole()));
    const auto step5 = data->train.images.gather(index, 5);
    CHECK(at::equal(step5, load_dataset(config, 3)->train.images.gather(index, 5)));
    CHECK(!at::equal(step5, plain));
    CHECK(!at::equal(step5, data->train.images.gather(index, 6)));
    // A row's draw does not depend on the rows beside it (a re-split batch sees the same pixels).
    CHECK(at::equal(step5[6], data->train.images.gather(at::tensor({6}, at::kLong), 5)[0]));
    // Each augmented row is one of the crops of its image padded by 2 zero pixels (as
    // torchvision's RandomCrop(8, padding=2) takes them), or that crop's mirror image.
    const auto padded = at::constant_pad_nd(plain, {2, 2, 2, 2}, 0.0);  // no normalization here
    for (int64_t r = 0; r < 8; ++r) {
      bool found = false;
      for (int64_t top = 0; top <= 4 && !found; ++top)
        for (int64_t left = 0; left <= 4 && !found; ++left) {
          const auto crop = padded[r].narrow(1, top, 8).narrow(2, left, 8);
          found = at::equal(step5[r], crop) || at::equal(step5[r], crop.flip({2}));
        }
      CHECK(found);
    }
    // Flips alone: each row is itself or its mirror image.
    config.augment.random_crop_padding = 0;
    const auto flips = load_dataset(config, 3)->train.images.gather(index, 9);
    int mirrored = 0;
    for (int64_t r = 0; r < 8; ++r) {
      const bool same = at::equal(flips[r], plain[r]);
      const bool mirror = at::equal(flips[r], plain[r].flip({2}));
      CHECK((same || mirror));
      mirrored += mirror && !same;
    }
    CHECK(mirrored > 0);
  }
}
