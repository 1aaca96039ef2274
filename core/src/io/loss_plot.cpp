// A loss curve drawn into an RGB image: steps along x, log10(loss) along y (a fit's loss falls
// over decades), a grid line per decade, no text (the figures are in the JSON and on stderr).
#include <algorithm>
#include <cmath>

#include "rlx/core/plot.h"

namespace rlx {

Tensor loss_plot(const std::vector<double>& losses, int64_t width, int64_t height) {
  Tensor img(DType::kU8, {height, width, 3});
  auto* px = img.as<uint8_t>();
  std::fill(px, px + img.numel(), uint8_t{255});
  auto put = [&](int64_t x, int64_t y, uint8_t r, uint8_t g, uint8_t b) {
    if (x < 0 || y < 0 || x >= width || y >= height) return;
    uint8_t* p = px + (y * width + x) * 3;
    p[0] = r, p[1] = g, p[2] = b;
  };
  const int64_t m = 20;  // margin
  const int64_t x0 = m, x1 = width - m, y0 = m, y1 = height - m;
  std::vector<double> logs;
  for (double l : losses)
    if (std::isfinite(l) && l > 0) logs.push_back(std::log10(l));
  double lo = logs.empty() ? 0 : *std::min_element(logs.begin(), logs.end());
  double hi = logs.empty() ? 1 : *std::max_element(logs.begin(), logs.end());
  lo = std::floor(lo), hi = std::max(std::ceil(hi), lo + 1);
  auto y_of = [&](double v) {
    return y1 - static_cast<int64_t>(std::lround((v - lo) / (hi - lo) * double(y1 - y0)));
  };
  for (double d = lo; d <= hi; d += 1)  // one grey line per decade
    for (int64_t x = x0; x <= x1; ++x) put(x, y_of(d), 210, 210, 210);
  for (int64_t x = x0; x <= x1; ++x) put(x, y1, 0, 0, 0);
  for (int64_t y = y0; y <= y1; ++y) put(x0, y, 0, 0, 0);
  const size_t n = losses.size();
  int64_t px_prev = -1, py_prev = -1;
  for (size_t i = 0; i < n; ++i) {
    if (!(std::isfinite(losses[i]) && losses[i] > 0)) continue;
    const int64_t x = x0 + (n > 1 ? static_cast<int64_t>(i * (x1 - x0) / (n - 1)) : 0);
    const int64_t y = y_of(std::log10(losses[i]));
    if (px_prev >= 0) {  // a line from the previous point, thickened by a pixel
      const int64_t steps = std::max(std::abs(x - px_prev), std::abs(y - py_prev)) + 1;
      for (int64_t s = 0; s <= steps; ++s) {
        const int64_t lx = px_prev + (x - px_prev) * s / steps;
        const int64_t ly = py_prev + (y - py_prev) * s / steps;
        put(lx, ly, 31, 90, 200), put(lx, ly + 1, 31, 90, 200);
      }
    }
    px_prev = x, py_prev = y;
  }
  return img;
}

}  // namespace rlx
