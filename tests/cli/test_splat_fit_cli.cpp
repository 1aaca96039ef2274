// `rlx splat-fit`: a small picture written by the test is fitted end to end; the PSNR is
// recomputed here from the PNG the command wrote, and the loss plot must be a PNG.
#include <cmath>

#include "cli_fixture.h"
#include "rlx/core/png.h"

namespace rlx::cli {
namespace {

class SplatFitCliTest : public CliTest {
 protected:
  // A smooth 32x32 picture: two soft discs on a gradient.
  fs::path write_picture() {
    const int64_t s = 32;
    Tensor img(DType::kU8, {s, s, 3});
    for (int64_t y = 0; y < s; ++y)
      for (int64_t x = 0; x < s; ++x) {
        const double u = (x + 0.5) / s, v = (y + 0.5) / s;
        const double d1 = std::exp(-((u - 0.3) * (u - 0.3) + (v - 0.4) * (v - 0.4)) / 0.02);
        const double d2 = std::exp(-((u - 0.7) * (u - 0.7) + (v - 0.65) * (v - 0.65)) / 0.03);
        const double c[3] = {0.2 + 0.6 * d1, 0.3 * u + 0.5 * d2, 0.4 + 0.3 * v - 0.3 * d1};
        for (int k = 0; k < 3; ++k)
          img.as<uint8_t>()[(y * s + x) * 3 + k] =
              static_cast<uint8_t>(std::lround(255 * std::clamp(c[k], 0.0, 1.0)));
      }
    fs::path p = dir_ / "picture.png";
    write_png(p, img);
    return p;
  }
};

TEST_F(SplatFitCliTest, FitsAPictureAndWritesTheRenderAndTheLossPlot) {
  const fs::path in = write_picture();
  const fs::path out = dir_ / "fit.png";
  ProcessResult r = rlx({"splat-fit", in.string(), "--gaussians", "200", "--steps", "150", "-o",
                         out.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = parse_json(r);
  ASSERT_TRUE(doc.find("psnr_db") && doc.find("psnr_db")->as_number()) << r.out;
  const double reported = doc.find("psnr_db")->as_number()->value;
  const auto* losses = doc.find("losses")->as_array();
  ASSERT_TRUE(losses && losses->size() == 150);
  EXPECT_LT(losses->back().as_number()->value, 0.2 * losses->front().as_number()->value);
  // The PSNR of the written 8-bit image against the input, computed here.
  const Tensor a = read_png_rgb(in), b = read_png_rgb(out);
  ASSERT_EQ(a.shape(), b.shape());
  double se = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = (double(a.as<uint8_t>()[i]) - b.as<uint8_t>()[i]) / 255.0;
    se += d * d;
  }
  const double psnr = -10 * std::log10(se / double(a.numel()));
  EXPECT_GT(psnr, 30.0);
  EXPECT_NEAR(psnr, reported, 0.5);  // rounding to 8 bits moves it a little
  const Tensor plot = read_png_rgb(dir_ / "fit-loss.png");
  EXPECT_EQ(plot.shape(), (std::vector<int64_t>{360, 640, 3}));
}

TEST_F(SplatFitCliTest, AMissingImageIsAnErrorNamingIt) {
  ProcessResult r =
      rlx({"splat-fit", (dir_ / "nope.png").string(), "-o", (dir_ / "o.png").string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("nope.png"));
}

}  // namespace
}  // namespace rlx::cli
