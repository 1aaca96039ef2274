// Fits Gaussians to an image with Adam through the public API (rlx/core/splat.h), the way
// `rlx splat-fit` does, and writes the render and the loss curve as PNGs.
//
//   rlx_example_splat_fit [--plugin-path DIR] [--gaussians N] [--steps S] [IN.png] OUT_DIR
//
// Without IN.png it fits a synthetic 64x64 picture (discs on a gradient), written as
// OUT_DIR/target.png beside OUT_DIR/fit.png and OUT_DIR/loss.png.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "rlx/core/error.h"
#include "rlx/core/plot.h"
#include "rlx/core/png.h"
#include "rlx/core/splat.h"
#include "rlx/registry/registry.h"

namespace {

rlx::Tensor synthetic_picture(int64_t size) {
  rlx::Tensor img(rlx::DType::kF32, {size, size, 3});
  struct Disc {
    double x, y, r, c[3];
  };
  const Disc discs[] = {{0.3, 0.35, 0.18, {0.9, 0.2, 0.1}},
                        {0.68, 0.6, 0.22, {0.1, 0.5, 0.9}},
                        {0.45, 0.75, 0.12, {0.95, 0.85, 0.2}}};
  for (int64_t y = 0; y < size; ++y)
    for (int64_t x = 0; x < size; ++x) {
      const double u = (x + 0.5) / size, v = (y + 0.5) / size;
      double c[3] = {0.2 + 0.3 * u, 0.25 + 0.2 * v, 0.3};
      for (const Disc& d : discs) {
        // A soft edge, so the picture is something Gaussians can reach.
        const double w = 1 / (1 + std::exp((std::hypot(u - d.x, v - d.y) - d.r) * 60));
        for (int k = 0; k < 3; ++k) c[k] = c[k] * (1 - w) + d.c[k] * w;
      }
      for (int k = 0; k < 3; ++k)
        img.as<float>()[(y * size + x) * 3 + k] = static_cast<float>(c[k]);
    }
  return img;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    rlx::registry::Options options;
    rlx::SplatFitOptions fit;
    fit.gaussians = 1000, fit.steps = 300;
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--plugin-path") == 0 && i + 1 < argc)
        options.plugin_paths.push_back(argv[++i]);
      else if (std::strcmp(argv[i], "--gaussians") == 0 && i + 1 < argc)
        fit.gaussians = std::stoll(argv[++i]);
      else if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
        fit.steps = std::stoll(argv[++i]);
      else
        args.push_back(argv[i]);
    }
    if (args.empty() || args.size() > 2) {
      std::fprintf(stderr,
                   "usage: %s [--plugin-path DIR] [--gaussians N] [--steps S] [IN.png] OUT_DIR\n",
                   argv[0]);
      return 2;
    }
    const std::string dir = args.back();
    rlx::Tensor target;
    if (args.size() == 2) {
      target = rlx::u8_to_unit_f32(rlx::read_png_rgb(args[0]));
    } else {
      target = synthetic_picture(64);
      rlx::write_png(dir + "/target.png", rlx::unit_f32_to_u8(target));
    }
    auto registry = rlx::registry::Registry::discover(options);
    rlx::SplatFitResult r = rlx::fit_gaussians_to_image(
        registry.target("cpu"), target, fit, [&](int64_t step, double loss) {
          if ((step + 1) % 50 == 0)
            std::fprintf(stderr, "step %lld: loss %.5f\n", (long long)step + 1, loss);
        });
    rlx::write_png(dir + "/fit.png", rlx::unit_f32_to_u8(r.image));
    rlx::write_png(dir + "/loss.png", rlx::loss_plot(r.losses));
    std::printf(
        "PSNR %.2f dB after %lld steps with %lld Gaussians; wrote %s/fit.png and %s/loss.png\n",
        r.psnr, (long long)fit.steps, (long long)fit.gaussians, dir.c_str(), dir.c_str());
    return 0;
  } catch (const rlx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
