// all_reduce (f32 sum) bandwidth on the ranks mpirun starts, for 1 KB .. 256 MB, three ways in
// the same run, interleaved round by round:
//   rlx    a graph `AllReduce(x) {reduce = "sum"}` compiled for the cpu target and run with its
//          output bound to its input's memory (an in-place update, core/src/runtime/in_place.h:
//          the exchange runs on the caller's buffer, as gloo's in-place call below does), through
//          the op's path (the plugin's Gloo channel); `rlx-copy` runs it into a separate output
//   gloo   gloo::allreduce on the buffer in place, with Gloo's own sum, on a context of its own
//   mpi    MPI_Allreduce(MPI_IN_PLACE, MPI_FLOAT, MPI_SUM)
// Each figure is the median over 5 rounds of the mean time per call; bandwidth is the tensor's
// bytes over that time. Rank 0 prints a Markdown table.
//   mpirun -n 2 rlx_bench_allreduce [max MB, default 256]
#include <fmt/format.h>
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "rlx/registry/registry.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_per_call(int calls, const std::function<void()>& f) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = Clock::now();
  for (int i = 0; i < calls; ++i) f();
  double s = std::chrono::duration<double>(Clock::now() - t0).count() / calls;
  // Every rank reports the slowest rank's time, so all ranks agree.
  MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int64_t max_mb = argc > 1 ? std::atoll(argv[1]) : 256;
  // One rendezvous folder for both Gloo users, named by rank 0.
  char folder[256] = {0};
  if (rank == 0) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "rlx-bench-coll-XXXXXX").string();
    std::snprintf(folder, sizeof folder, "%s", ::mkdtemp(tmpl.data()));
    std::filesystem::create_directories(std::filesystem::path(folder) / "gloo");
  }
  MPI_Bcast(folder, sizeof folder, MPI_CHAR, 0, MPI_COMM_WORLD);
  try {
    rlx::registry::Options o;
    o.plugin_paths = {RLX_BENCH_PLUGIN_DIR};
    o.build_legality = false;
    static auto* reg = new rlx::registry::Registry(rlx::registry::Registry::discover(o));
    std::shared_ptr<rlx::Target> cpu = reg->target("cpu");
    std::unique_ptr<rlx::Channel> channel =
        cpu->open_channel({rank, size, fmt::format("file://{}/rlx?timeout=120", folder)});

    auto device = gloo::transport::tcp::CreateDevice("127.0.0.1");
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(std::chrono::seconds(120));
    gloo::rendezvous::FileStore store(std::string(folder) + "/gloo");
    gloo::rendezvous::PrefixStore prefix("bench", store);
    context->connectFullMesh(prefix, device);

    rlx::Session session(cpu);
    if (rank == 0)
      fmt::print(
          "| size | rlx GB/s | rlx-copy GB/s | gloo GB/s | mpi GB/s | rlx / gloo | rlx-copy / gloo "
          "| rlx / mpi |\n|---|---|---|---|---|---|---|---|\n");
    for (int64_t bytes = 1024; bytes <= max_mb * 1024 * 1024; bytes *= 4) {
      const int64_t n = bytes / 4;
      rlx::CompiledModel model = session.compile(rlx::parse_graph(
          fmt::format("graph @ar(%x: f32[{}]) {{\n  %y = AllReduce(%x) {{reduce = \"sum\"}} : "
                      "f32[{}]\n  return %y\n}}\n",
                      n, n),
          "allreduce.rlx"));
      rlx::NamedTensors inputs{{"x", rlx::Tensor(rlx::DType::kF32, {n})}}, outputs;
      std::fill_n(inputs["x"].as<float>(), n, 1.0f);
      model.run(inputs, outputs);
      if (outputs.at("y").as<float>()[n - 1] != static_cast<float>(size))
        throw std::runtime_error("rlx's AllReduce gave a wrong sum");
      rlx::NamedTensors same{
          {"y", rlx::Tensor::view(rlx::DType::kF32, {n}, inputs["x"].as<float>(), nullptr)}};
      model.run(inputs, same);
      if (same.at("y").data() != inputs["x"].data() ||
          inputs["x"].as<float>()[n - 1] != static_cast<float>(size))
        throw std::runtime_error("rlx's AllReduce did not run in place");
      std::vector<float> g(n, 1.0f), m(n, 1.0f);
      const int calls = static_cast<int>(std::clamp<int64_t>((int64_t{64} << 20) / bytes, 2, 500));
      std::vector<double> t_rlx, t_copy, t_gloo, t_mpi;
      for (int round = 0; round < 5; ++round) {
        t_rlx.push_back(seconds_per_call(calls, [&] { model.run(inputs, same); }));
        t_copy.push_back(seconds_per_call(calls, [&] { model.run(inputs, outputs); }));
        t_gloo.push_back(seconds_per_call(calls, [&] {
          gloo::AllreduceOptions opts(context);
          opts.setOutput(g.data(), g.size());
          opts.setReduceFunction(
              static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
          gloo::allreduce(opts);
        }));
        t_mpi.push_back(seconds_per_call(calls, [&] {
          MPI_Allreduce(MPI_IN_PLACE, m.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD);
        }));
      }
      const double r = median(t_rlx), rc = median(t_copy), gl = median(t_gloo), mp = median(t_mpi);
      auto gbs = [&](double s) { return static_cast<double>(bytes) / s / 1e9; };
      const std::string label = bytes >= (1 << 20) ? fmt::format("{} MB", bytes >> 20)
                                                   : fmt::format("{} KB", bytes >> 10);
      if (rank == 0)
        fmt::print("| {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.2f} | {:.2f} | {:.2f} |\n", label,
                   gbs(r), gbs(rc), gbs(gl), gbs(mp), gl / r, gl / rc, mp / r);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "rank {}: {}\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::filesystem::remove_all(folder);
  MPI_Finalize();
  return 0;
}
