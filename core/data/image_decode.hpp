// Images as people have them, decoded: PNG with libpng (its simplified API, which converts any
// bit depth, palette and alpha) and JPEG with libjpeg-turbo (TurboJPEG), into 8-bit pixels of
// one (gray) or three (RGB) channels, row by row [height, width, channels]. No codec of ours.
//
// Thread safety: pure functions; any number of threads decode at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

struct decoded_image {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
  std::vector<uint8_t> pixels;  ///< height x width x channels
  std::string error;            ///< why it could not be decoded; empty when it was
};

/// The largest image decoded: 2^26 pixels (8192 x 8192); a header that claims more is refused
/// before anything is allocated.
inline constexpr int64_t max_image_pixels = int64_t{1} << 26;

/// Decodes a PNG or JPEG file's `bytes` (told apart by their signature) to `channels` (1 or 3)
/// channels: color to gray by the decoder's luma (TurboJPEG's Y, libpng's sRGB weights), gray
/// to RGB by copying, transparent PNG pixels composited onto black. Never throws for bad bytes: a
/// file that is not such an image, or is cut short or corrupt, comes back with `error` saying what.
decoded_image decode_image(const std::string& bytes, int channels);

}  // namespace troupe
