// `rlx splat-fit IMAGE.png --gaussians N --steps S -o OUT.png`: fits 3D Gaussians seen by a
// fixed camera to a 2D image with Adam (rlx/core/splat.h) and writes the render and a loss plot.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "commands.h"
#include "json_out.h"
#include "model.h"
#include "options.h"
#include "rlx/core/error.h"
#include "rlx/core/plot.h"
#include "rlx/core/png.h"
#include "rlx/core/progress.h"
#include "rlx/core/splat.h"
#include "stderr_status.h"

namespace rlx::cli {
namespace {

namespace fs = std::filesystem;

struct SplatFitOptionsCli {
  std::string image, target = "cpu";
  std::optional<std::string> output, plot;
  int64_t gaussians = 2000, steps = 300, seed = 0;
  std::optional<double> lr;
  bool json = false;
};

bool positive(double v) {
  return v > 0;
}

void declare_splat_fit_options(CLI::App& app, SplatFitOptionsCli& o) {
  add_argument(app, "IMAGE.png", o.image, Presence::kRequired);
  add_value(app, "-o,--output", "OUT.png", o.output, "where to write the fitted render (PNG)");
  add_value(app, "--plot", "LOSS.png", o.plot,
            "where to write the loss curve (default: OUT.png with -loss before .png)");
  add_integer(app, "--gaussians", "N", 1, o.gaussians, "Gaussians to fit (default 2000)");
  add_integer(app, "--steps", "S", 0, o.steps, "Adam steps (default 300)");
  add_number(app, "--lr", "LR", positive, "(0, inf)", o.lr, "Adam's learning rate (default 0.01)");
  add_integer(app, "--seed", "N", 0, o.seed, "seed of the initial Gaussians (default 0)");
  add_target_option(app, o.target, "fit on");
  add_flag(
      app, "--json", o.json,
      "print {\"psnr_db\", \"losses\": [...], \"seconds\", \"output\", \"plot\", ...} on stdout");
}

fs::path default_plot(const fs::path& out) {
  return out.parent_path() / (out.stem().string() + "-loss.png");
}

int splat_fit_main(const SplatFitOptionsCli& o, const GlobalOptions& global) {
  StderrStatus status(global.quiet);
  const std::optional<fs::path> out = writable_path(o.output, "--output");
  if (!out) throw_user_error("splat-fit: give -o OUT.png, where the fitted image is written");
  const fs::path plot = writable_path(o.plot, "--plot").value_or(default_plot(*out));
  const Tensor target_u8 = read_png_rgb(o.image);
  const Tensor target = u8_to_unit_f32(target_u8);
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::shared_ptr<Target> device = choose_target(reg, o.target);
  require_can_execute(*device, device->name(), o.image);

  SplatFitOptions fit;
  fit.gaussians = o.gaussians, fit.steps = o.steps, fit.seed = static_cast<unsigned>(o.seed);
  if (o.lr) fit.lr = *o.lr;
  const auto start = std::chrono::steady_clock::now();
  SplatFitResult r;
  {
    progress::Task task(fmt::format("fitting {} Gaussians", o.gaussians), o.steps);
    r = fit_gaussians_to_image(device, target, fit, [&](int64_t step, double loss) {
      if (!std::isfinite(loss))
        throw_user_error(fmt::format("splat-fit diverged at step {} (loss {}); try a smaller --lr",
                                     step + 1, loss));
      task.advance();
    });
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_png(*out, unit_f32_to_u8(r.image));
  write_png(plot, loss_plot(r.losses));
  if (o.json) {
    json::Array losses;
    for (double l : r.losses) losses.push_back(jnumber(l));
    json::Object doc{{"psnr_db", std::isfinite(r.psnr) ? jnumber(r.psnr) : jnull()},
                     {"losses", json::Value{losses}},
                     {"seconds", jnumber(seconds)},
                     {"gaussians", jint(o.gaussians)},
                     {"steps", jint(o.steps)},
                     {"width", jint(target.shape()[1])},
                     {"height", jint(target.shape()[0])},
                     {"target", jstring(device->name())},
                     {"output", jstring(out->string())},
                     {"plot", jstring(plot.string())}};
    std::fputs((to_json_text(json::Value{std::move(doc)}) + "\n").c_str(), stdout);
    return 0;
  }
  std::fputs(fmt::format("fitted {} Gaussians to {} ({}x{}) in {} steps on {}, {:.1f} s\n"
                         "  PSNR {:.2f} dB (final loss {:.3g})\n  wrote {} and {}\n",
                         o.gaussians, o.image, target.shape()[1], target.shape()[0], o.steps,
                         device->name(), seconds, r.psnr, r.losses.empty() ? 0.0 : r.losses.back(),
                         out->string(), plot.string())
                 .c_str(),
             stdout);
  return 0;
}

}  // namespace

Command splat_fit_command() {
  return make_command<SplatFitOptionsCli>(
      {"splat-fit", "fit Gaussians to an image with Adam; write the render and a loss plot",
       "IMAGE.png -o OUT.png [--gaussians N] [--steps S] [--lr LR] [--seed N] [--plot LOSS.png]\n"
       "       [--target T] [--json]",
       "Fits N 3D Gaussians seen by a fixed pinhole camera to IMAGE.png (RGB; grey and palette\n"
       "images are expanded, alpha is composited over black) by rendering them with\n"
       "ProjectGaussians, TileBin and Rasterize each step and minimising the mean squared error\n"
       "with Adam (autodiff through the ops' backward kernels). Means, log-scales, quaternions,\n"
       "opacity and colour logits are trained; they start spread uniformly over the image from\n"
       "--seed. Writes the final render to OUT.png and the loss curve (log scale) to --plot.\n"
       "Progress goes to stderr; the PSNR of the render against the image is printed."},
      &declare_splat_fit_options, &splat_fit_main);
}

}  // namespace rlx::cli
