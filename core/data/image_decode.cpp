#include "core/data/image_decode.hpp"

#include <png.h>
#include <turbojpeg.h>

#include <cstring>
#include <memory>

namespace troupe {
namespace {

bool is_png(const std::string& bytes) {
  return bytes.size() >= 8 &&
         png_sig_cmp(reinterpret_cast<png_const_bytep>(bytes.data()), 0, 8) == 0;
}

bool is_jpeg(const std::string& bytes) {
  return bytes.size() >= 3 && static_cast<unsigned char>(bytes[0]) == 0xff &&
         static_cast<unsigned char>(bytes[1]) == 0xd8 &&
         static_cast<unsigned char>(bytes[2]) == 0xff;
}

decoded_image failed(std::string why) {
  decoded_image out;
  out.error = std::move(why);
  return out;
}

bool too_large(int64_t height, int64_t width) {
  return height <= 0 || width <= 0 || height > max_image_pixels / width;
}

decoded_image decode_png(const std::string& bytes, int channels) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    return failed(std::string("not a readable PNG (") + image.message + ")");
  if (too_large(image.height, image.width)) {
    png_image_free(&image);
    return failed("a PNG of " + std::to_string(image.width) + " x " + std::to_string(image.height) +
                  " pixels, more than troupe decodes");
  }
  // As torchvision's loader gives it (PIL's convert("RGB"), then "L" for one channel): read as
  // RGBA and the alpha dropped, not composited onto black (transparent pixels keep their
  // colour); 16-bit samples scaled to 8 bits (libpng took them for linear light and brightened
  // them); gray as PIL's luma of RGB (libpng's is of linear light: pure red gave 126, not 76).
  image.format = PNG_FORMAT_RGBA;
  image.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
  std::vector<unsigned char> rgba(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, rgba.data(), 0, nullptr))
    return failed(std::string("a corrupt PNG (") + image.message + ")");
  decoded_image out;
  out.height = image.height;
  out.width = image.width;
  out.channels = channels;
  const auto pixels = static_cast<std::size_t>(image.width) * image.height;
  out.pixels.resize(pixels * static_cast<std::size_t>(channels));
  for (std::size_t p = 0; p < pixels; ++p) {
    const unsigned char* px = &rgba[4 * p];
    if (channels == 1)
      out.pixels[p] = static_cast<unsigned char>(
          (px[0] * 19595u + px[1] * 38470u + px[2] * 7471u + 0x8000u) >> 16);
    else
      std::memcpy(&out.pixels[3 * p], px, 3);
  }
  return out;
}

decoded_image decode_jpeg(const std::string& bytes, int channels) {
  const std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitDecompress(), tjDestroy);
  if (!handle)
    return failed("cannot start the JPEG decoder");
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto size = static_cast<unsigned long>(bytes.size());
  if (tjDecompressHeader3(handle.get(), data, size, &width, &height, &subsampling, &colorspace) !=
      0)
    return failed(std::string("not a readable JPEG (") + tjGetErrorStr2(handle.get()) + ")");
  if (too_large(height, width))
    return failed("a JPEG of " + std::to_string(width) + " x " + std::to_string(height) +
                  " pixels, more than troupe decodes");
  // Sound, but not a kind troupe decodes (libjpeg-turbo cannot turn it into RGB or gray).
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK)
    return failed(
        "a CMYK JPEG: troupe decodes gray and color (YCbCr) JPEGs; convert it, e.g. with PIL: "
        "Image.open(f).convert(\"RGB\").save(f)");
  decoded_image out;
  out.height = height;
  out.width = width;
  out.channels = channels;
  out.pixels.resize(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) *
                    static_cast<std::size_t>(channels));
  const int format = channels == 1 ? TJPF_GRAY : TJPF_RGB;
  // TJFLAG_STOPONWARNING: a JPEG cut short is an error, not an image with a gray bottom.
  if (tjDecompress2(handle.get(), data, size, out.pixels.data(), width, 0, height, format,
                    TJFLAG_ACCURATEDCT | TJFLAG_STOPONWARNING) != 0)
    return failed(std::string("a corrupt JPEG (") + tjGetErrorStr2(handle.get()) + ")");
  return out;
}

}  // namespace

decoded_image decode_image(const std::string& bytes, int channels) {
  if (channels != 1 && channels != 3)
    return failed("channels must be 1 or 3");
  if (is_png(bytes))
    return decode_png(bytes, channels);
  if (is_jpeg(bytes))
    return decode_jpeg(bytes, channels);
  return failed("neither a PNG nor a JPEG (its first bytes are no such signature)");
}

}  // namespace troupe
