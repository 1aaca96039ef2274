#include "rlx/core/png.h"

#include <fmt/format.h>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "rlx/core/error.h"

namespace rlx {

Tensor read_png_rgb(const std::filesystem::path& file) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, file.c_str()))
    throw_user_error(fmt::format("{}: not a readable PNG file ({})", file.string(), img.message));
  img.format = PNG_FORMAT_RGB;  // libpng expands grey and palettes and composites alpha
  Tensor out(DType::kU8, {static_cast<int64_t>(img.height), static_cast<int64_t>(img.width), 3});
  const png_color black{0, 0, 0};
  if (!png_image_finish_read(&img, &black, out.data(), 0, nullptr)) {
    std::string why = img.message;
    png_image_free(&img);
    throw_user_error(fmt::format("{}: the PNG data cannot be decoded ({})", file.string(), why));
  }
  return out;
}

void write_png(const std::filesystem::path& file, const Tensor& image) {
  const auto& s = image.shape();
  if (image.dtype() != DType::kU8 || s.size() < 2 || s.size() > 3 || (s.size() == 3 && s[2] != 3))
    throw_user_error("write_png takes u8 [height, width, 3] or [height, width]");
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = static_cast<png_uint_32>(s[1]);
  img.height = static_cast<png_uint_32>(s[0]);
  img.format = s.size() == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  if (!png_image_write_to_file(&img, file.c_str(), 0, image.data(), 0, nullptr))
    throw_user_error(fmt::format("{}: cannot write the PNG ({})", file.string(), img.message));
}

Tensor u8_to_unit_f32(const Tensor& image) {
  Tensor out(DType::kF32, image.shape());
  for (int64_t i = 0; i < image.numel(); ++i)
    out.as<float>()[i] = static_cast<float>(image.as<uint8_t>()[i]) / 255.0f;
  return out;
}

Tensor unit_f32_to_u8(const Tensor& image) {
  Tensor out(DType::kU8, image.shape());
  for (int64_t i = 0; i < image.numel(); ++i) {
    const float v = std::clamp(image.as<float>()[i], 0.0f, 1.0f);
    out.as<uint8_t>()[i] = static_cast<uint8_t>(std::lround(v * 255.0f));
  }
  return out;
}

}  // namespace rlx
