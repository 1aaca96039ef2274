// Times a target's splatting ops (cpu unless TARGET says otherwise: cuda runs them natively too)
// on a scene written by bench/splat/run.py: the render (ProjectGaussians, TileBin, Rasterize)
// and the render plus the gradients of loss = sum(image * weights) for means, scales,
// quaternions, opacities and colours. On a device target a run's time includes copying the
// scene to the device and the image (or the gradients) back.
//
//   rlx_bench_splat DIR N WIDTH HEIGHT REPS [TARGET]   (DIR holds means.f32 ... weights.f32)
// Prints {"forward_s": [...], "forward_backward_s": [...]} and writes DIR/rlx_image.f32 and
// DIR/rlx_grads.f32 (the gradients, in the order above, flattened) for the driver's check.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "rlx/core/autodiff.h"
#include "rlx/core/error.h"
#include "rlx/core/runtime.h"
#include "rlx/core/splat.h"
#include "rlx/registry/registry.h"

namespace {

rlx::Tensor read_f32(const std::string& file, std::vector<int64_t> shape) {
  rlx::Tensor t(rlx::DType::kF32, std::move(shape));
  std::ifstream in(file, std::ios::binary);
  in.read(static_cast<char*>(t.data()), static_cast<std::streamsize>(t.nbytes()));
  if (!in) rlx::throw_user_error(file + ": too short or missing");
  return t;
}

void write_f32(const std::string& file, const rlx::Tensor& t) {
  std::ofstream(file, std::ios::binary | std::ios::app)
      .write(static_cast<const char*>(t.data()), static_cast<std::streamsize>(t.nbytes()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6 && argc != 7) {
    std::fprintf(stderr, "usage: %s DIR N WIDTH HEIGHT REPS [TARGET]\n", argv[0]);
    return 2;
  }
  try {
    const std::string dir = argv[1];
    const int64_t n = std::stoll(argv[2]), w = std::stoll(argv[3]), h = std::stoll(argv[4]);
    const int reps = std::stoi(argv[5]);
    const std::string target = argc == 7 ? argv[6] : "cpu";
    rlx::NamedTensors in = {{"means", read_f32(dir + "/means.f32", {n, 3})},
                            {"scales", read_f32(dir + "/scales.f32", {n, 3})},
                            {"quats", read_f32(dir + "/quats.f32", {n, 4})},
                            {"opacities", read_f32(dir + "/opacities.f32", {n})},
                            {"colors", read_f32(dir + "/colors.f32", {n, 3})},
                            {"background", read_f32(dir + "/background.f32", {3})},
                            {"viewmat", read_f32(dir + "/viewmat.f32", {4, 4})},
                            {"intrinsics", read_f32(dir + "/intrinsics.f32", {4})},
                            {"weights", read_f32(dir + "/weights.f32", {h, w, 3})}};
    rlx::Graph g;
    rlx::GraphBuilder b(g);
    rlx::SplatValues v;
    v.means = b.input("means", {rlx::DType::kF32, {n, 3}});
    v.scales = b.input("scales", {rlx::DType::kF32, {n, 3}});
    v.quats = b.input("quats", {rlx::DType::kF32, {n, 4}});
    v.opacities = b.input("opacities", {rlx::DType::kF32, {n}});
    v.colors = b.input("colors", {rlx::DType::kF32, {n, 3}});
    v.background = b.input("background", {rlx::DType::kF32, {3}});
    v.viewmat = b.input("viewmat", {rlx::DType::kF32, {4, 4}});
    v.intrinsics = b.input("intrinsics", {rlx::DType::kF32, {4}});
    const rlx::ValueId weights = b.input("weights", {rlx::DType::kF32, {h, w, 3}});
    rlx::SplatCamera cam;
    cam.width = w, cam.height = h;
    cam.capacity =
        std::stoll(std::getenv("RLX_SPLAT_CAPACITY") ? std::getenv("RLX_SPLAT_CAPACITY") : "0");
    const rlx::SplatRender r = rlx::append_splat_render(b, v, cam);
    b.output(r.image);
    rlx::Graph forward = g;
    const rlx::ValueId loss = b.reduce(b.mul(r.image, weights), {0, 1, 2}, rlx::ReduceKind::kSum);
    g.outputs.clear();
    b.output(loss);
    for (rlx::ValueId grad :
         rlx::append_gradients(g, loss, {v.means, v.scales, v.quats, v.opacities, v.colors}))
      b.output(grad);

    auto registry = rlx::registry::Registry::discover({});
    rlx::Session session(registry.target(target));
    rlx::CompiledModel fwd = session.compile(forward);
    rlx::CompiledModel both = session.compile(g);
    rlx::NamedTensors fo, bo;
    auto time = [&](rlx::CompiledModel& m, rlx::NamedTensors& out) {
      const auto t0 = std::chrono::steady_clock::now();
      m.run(in, out);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    time(fwd, fo), time(both, bo);  // warm-up: first-run allocation
    std::string f_list, b_list;
    for (int i = 0; i < reps; ++i) {  // interleaved, like the driver's rounds
      f_list += fmt::format("{}{:.6f}", i ? ", " : "", time(fwd, fo));
      b_list += fmt::format("{}{:.6f}", i ? ", " : "", time(both, bo));
    }
    std::remove((dir + "/rlx_image.f32").c_str());
    std::remove((dir + "/rlx_grads.f32").c_str());
    write_f32(dir + "/rlx_image.f32", fo.at(forward.values[forward.outputs[0]].name));
    for (size_t k = 1; k < g.outputs.size(); ++k)
      write_f32(dir + "/rlx_grads.f32", bo.at(g.values[g.outputs[k]].name));
    std::printf("{\"forward_s\": [%s], \"forward_backward_s\": [%s]}\n", f_list.c_str(),
                b_list.c_str());
    return 0;
  } catch (const rlx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
