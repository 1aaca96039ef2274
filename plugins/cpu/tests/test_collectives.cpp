// The collective HIR ops on the cpu target (Gloo over loopback TCP): each op on 2, 3 and 4
// ranks for every dtype the ops take, against values computed here from each rank's known
// input; a killed rank makes the others fail fast with a message naming the collective; other
// targets refuse the ops by name. Ranks are forked processes joined through a fresh FileStore
// folder, as `rlx run --nproc N` joins them.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <thread>

#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx {
namespace {

using Clock = std::chrono::steady_clock;

struct RankResult {
  int exit_code = -1;  // -1: killed by a signal (or still running at the deadline)
  std::string message;
};

// Forks `world` ranks; each opens a channel on the cpu target and runs body(rank). A rank's
// exit code is 0 when body returned, 1 when it threw (the message is kept).
std::vector<RankResult> run_ranks(int world, const std::function<void(int)>& body,
                                  double timeout_s = 20) {
  test::TempDir dir;
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int code = 0;
      std::string msg;
      try {
        std::shared_ptr<Target> cpu = test::cpu_target();
        std::unique_ptr<Channel> channel = cpu->open_channel(
            {r, world, fmt::format("file://{}/store?timeout={}", dir.path().string(), timeout_s)});
        body(r);
      } catch (const std::exception& e) {
        msg = e.what();
        code = 1;
      }
      std::ofstream(dir.path() / fmt::format("{}.msg", r)) << msg;
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  std::vector<RankResult> results(world);
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  for (int r = 0; r < world; ++r) {
    int status = 0;
    while (::waitpid(pids[r], &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(pids[r], SIGKILL);
        ::waitpid(pids[r], &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    results[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    results[r].message = test::read_file(dir.path() / fmt::format("{}.msg", r));
  }
  return results;
}

Tensor tensor_of(DType dt, std::vector<int64_t> shape, const std::vector<double>& v) {
  Tensor t(dt, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (dt) {
      case DType::kI8:
        t.as<int8_t>()[i] = static_cast<int8_t>(v[i]);
        break;
      case DType::kU8:
        t.as<uint8_t>()[i] = static_cast<uint8_t>(v[i]);
        break;
      case DType::kI32:
        t.as<int32_t>()[i] = static_cast<int32_t>(v[i]);
        break;
      case DType::kI64:
        t.as<int64_t>()[i] = static_cast<int64_t>(v[i]);
        break;
      case DType::kF16:
        t.as<uint16_t>()[i] = f32_to_f16(static_cast<float>(v[i]));
        break;
      case DType::kBF16:
        t.as<uint16_t>()[i] = f32_to_bf16(static_cast<float>(v[i]));
        break;
      case DType::kF32:
        t.as<float>()[i] = static_cast<float>(v[i]);
        break;
      default:
        t.as<double>()[i] = v[i];
        break;
    }
  }
  return t;
}

bool is_floating(DType dt) {
  return dt == DType::kF16 || dt == DType::kBF16 || dt == DType::kF32 || dt == DType::kF64;
}

// Rank r's input, element i: small positive integers, exact in every dtype and summed over four
// ranks without overflowing i8.
double input(int r, int64_t i) {
  return static_cast<double>((r * 7 + i * 3) % 11 + 1);
}

// Every collective in one graph, for rank `r` of `w` (Send and Recv form a ring).
std::string all_ops_graph(DType dt, int r, int w) {
  const std::string d(dtype_name(dt));
  const std::string x = fmt::format("{}[{},2]", d, 2 * w);
  std::string g = fmt::format("graph @coll(%x: {}) {{\n", x);
  g += fmt::format("  %sum = AllReduce(%x) {{reduce = \"sum\"}} : {}\n", x);
  g += fmt::format("  %max = AllReduce(%x) {{reduce = \"max\"}} : {}\n", x);
  g += fmt::format("  %min = AllReduce(%x) {{reduce = \"min\"}} : {}\n", x);
  if (is_floating(dt)) g += fmt::format("  %mean = AllReduce(%x) {{reduce = \"mean\"}} : {}\n", x);
  g += fmt::format("  %gather = AllGather(%x) {{world = {}}} : {}[{},2]\n", w, d, 2 * w * w);
  g += fmt::format("  %scatter = ReduceScatter(%x) {{world = {}}} : {}[2,2]\n", w, d);
  g += fmt::format("  %a2a = AllToAll(%x) {{world = {}}} : {}\n", w, x);
  g += fmt::format("  %bcast = Broadcast(%x) {{root = {}}} : {}\n", w - 1, x);
  g += fmt::format("  %sent = Send(%x) {{peer = {}}} : {}\n", (r + 1) % w, x);
  g += fmt::format("  %got = Recv(%sent) {{peer = {}}} : {}\n", (r + w - 1) % w, x);
  g +=
      fmt::format("  return %sum, %max, %min, {}%gather, %scatter, %a2a, %bcast, %sent, %got\n}}\n",
                  is_floating(dt) ? "%mean, " : "");
  return g;
}

// What each output of all_ops_graph holds on rank r of w, computed from input().
std::map<std::string, std::vector<double>> expected(DType dt, int r, int w) {
  const int64_t n = 4 * w;  // elements of x
  std::map<std::string, std::vector<double>> e;
  for (int64_t i = 0; i < n; ++i) {
    double s = 0, mx = -1e9, mn = 1e9;
    for (int q = 0; q < w; ++q)
      s += input(q, i), mx = std::max(mx, input(q, i)), mn = std::min(mn, input(q, i));
    e["sum"].push_back(s);
    e["max"].push_back(mx);
    e["min"].push_back(mn);
    if (is_floating(dt)) e["mean"].push_back(s / w);
    e["bcast"].push_back(input(w - 1, i));
    e["sent"].push_back(input(r, i));
    e["got"].push_back(input((r + w - 1) % w, i));
  }
  for (int q = 0; q < w; ++q)
    for (int64_t i = 0; i < n; ++i) e["gather"].push_back(input(q, i));
  for (int64_t j = 0; j < 4; ++j) e["scatter"].push_back(e["sum"][r * 4 + j]);
  for (int q = 0; q < w; ++q)  // block q of rank r's result is block r of rank q's input
    for (int64_t j = 0; j < 4; ++j) e["a2a"].push_back(input(q, r * 4 + j));
  return e;
}

// Compiles and runs the graph twice (the second run reuses its outputs) and throws on the first
// element that differs from expected().
void check_all_ops(DType dt, int r, int w) {
  Session session(test::cpu_target());
  CompiledModel model = session.compile(parse_graph(all_ops_graph(dt, r, w), "coll.rlx"));
  std::vector<double> x;
  for (int64_t i = 0; i < 4 * w; ++i) x.push_back(input(r, i));
  NamedTensors outputs;
  const auto want = expected(dt, r, w);
  const double tol = dtype_size(dt) == 2 ? 1e-2 : 1e-6;  // the 3-rank mean rounds in f16/bf16
  for (int run = 0; run < 2; ++run) {
    model.run({{"x", tensor_of(dt, {2 * w, 2}, x)}}, outputs);
    for (const auto& [name, values] : want) {
      auto it = outputs.find(name);
      if (it == outputs.end()) throw std::runtime_error("no output " + name);
      std::vector<double> got = test::values(it->second);
      if (got.size() != values.size())
        throw std::runtime_error(
            fmt::format("{}: {} elements, want {}", name, got.size(), values.size()));
      for (size_t i = 0; i < got.size(); ++i)
        if (std::abs(got[i] - values[i]) > tol * std::max(1.0, std::abs(values[i])))
          throw std::runtime_error(fmt::format("{} {} rank {} of {}: [{}] = {}, want {}",
                                               dtype_name(dt), name, r, w, i, got[i], values[i]));
    }
  }
}

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, EveryOpAndDTypeMatchesHandComputedValues) {
  const int w = GetParam();
  const DType dtypes[] = {DType::kI8,  DType::kU8,   DType::kI32, DType::kI64,
                          DType::kF16, DType::kBF16, DType::kF32, DType::kF64};
  std::vector<RankResult> results = run_ranks(w, [&](int r) {
    for (DType dt : dtypes) check_all_ops(dt, r, w);
  });
  for (int r = 0; r < w; ++r)
    EXPECT_EQ(results[r].exit_code, 0) << "rank " << r << ": " << results[r].message;
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(2, 3, 4));

// Groups of a 4-rank job (rlx/core/communicator.h): "block:2" is {0, 1} and {2, 3} (tensor
// parallel), "stride:2" is {0, 2} and {1, 3} (data parallel), interleaved with collectives on
// the world, so each communicator is its own: values computed here from each rank's input.
TEST(CollectiveGroups, BlockAndStrideGroupsExchangeWithinTheirRanks) {
  std::vector<RankResult> results = run_ranks(4, [](int r) {
    Session session(test::cpu_target());
    CompiledModel model = session.compile(parse_graph(R"(graph @g(%x: f32[4]) {
  %tp = AllReduce(%x) {comm = "block:2", reduce = "sum"} : f32[4]
  %w = AllReduce(%x) {reduce = "sum"} : f32[4]
  %dp = AllReduce(%x) {comm = "stride:2", reduce = "max"} : f32[4]
  %g = AllGather(%x) {comm = "block:2", world = 2} : f32[8]
  %b = Broadcast(%x) {comm = "stride:2", root = 1} : f32[4]
  return %tp, %w, %dp, %g, %b
}
)",
                                                      "groups.rlx"));
    std::vector<float> x;
    for (int64_t i = 0; i < 4; ++i) x.push_back(static_cast<float>(input(r, i)));
    for (int run = 0; run < 2; ++run) {
      NamedTensors out = model.run({{"x", test::f32({4}, x)}});
      const int block = r / 2 * 2, stride = r % 2;
      std::map<std::string, std::vector<double>> want;
      for (int64_t i = 0; i < 4; ++i) {
        want["tp"].push_back(input(block, i) + input(block + 1, i));
        want["w"].push_back(input(0, i) + input(1, i) + input(2, i) + input(3, i));
        want["dp"].push_back(std::max(input(stride, i), input(stride + 2, i)));
        want["b"].push_back(input(stride + 2, i));  // index 1 of {stride, stride + 2}
      }
      for (int q : {block, block + 1})
        for (int64_t i = 0; i < 4; ++i) want["g"].push_back(input(q, i));
      for (const auto& [name, values] : want)
        if (test::values(out.at(name)) != values)
          throw std::runtime_error(fmt::format("rank {}: {} = {}, want {}", r, name,
                                               fmt::join(test::values(out.at(name)), ", "),
                                               fmt::join(values, ", ")));
    }
  });
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(results[r].exit_code, 0) << "rank " << r << ": " << results[r].message;
}

// An output bound to its input's memory (core/src/runtime/in_place.h) makes the all-reduce and the
// broadcast exchange the caller's buffer itself: the results land there, in the same memory.
TEST(CollectiveGroups, AllReduceAndBroadcastRunInTheCallersBuffer) {
  std::vector<RankResult> results = run_ranks(2, [](int r) {
    Session session(test::cpu_target());
    for (const char* op : {"AllReduce(%x) {reduce = \"sum\"}", "Broadcast(%x) {root = 1}"}) {
      CompiledModel model = session.compile(parse_graph(
          fmt::format("graph @g(%x: f32[3]) {{\n  %y = {} : f32[3]\n  return %y\n}}\n", op), "g.rlx"));
      NamedTensors in = {{"x", test::f32({3}, {1.0f + r, 2.0f, 3.0f * r})}};
      NamedTensors out = {{"y", Tensor::view(DType::kF32, {3}, in["x"].as<float>(), nullptr)}};
      model.run(in, out);
      const std::vector<double> want =
          std::string(op).rfind("AllReduce", 0) == 0 ? std::vector<double>{3, 4, 3}
                                                      : std::vector<double>{2, 2, 3};
      if (out.at("y").data() != in["x"].data() || test::values(in["x"]) != want)
        throw std::runtime_error(fmt::format("rank {}: {} gave {} in {} memory", r, op,
                                             fmt::join(test::values(out.at("y")), ", "),
                                             out.at("y").data() == in["x"].data() ? "the same" : "other"));
    }
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(results[r].exit_code, 0) << "rank " << r << ": " << results[r].message;
}

// AllReduces run in the background (the executable waits before the first kernel that reads
// their result): two in flight at once, kernels between them, a synchronous AllGather after
// (which drains them first) and a result that is also a program output; three runs.
TEST(CollectiveGroups, BackgroundAllReducesGiveHandValues) {
  std::vector<RankResult> results = run_ranks(3, [](int r) {
    Session session(test::cpu_target());
    CompiledModel model = session.compile(parse_graph(R"(graph @g(%x: f32[4], %y: f32[4]) {
  %a = AllReduce(%x) {reduce = "sum"} : f32[4]
  %e = mul(%y, %y) : f32[4]
  %b = AllReduce(%e) {reduce = "max"} : f32[4]
  %f = add(%e, %y) : f32[4]
  %c = add(%a, %b) : f32[4]
  %g = AllGather(%f) {world = 3} : f32[12]
  return %c, %g, %a
}
)",
                                                      "background.rlx"));
    auto vec = [](int q, double scale) {
      std::vector<double> v;
      for (int64_t i = 0; i < 4; ++i) v.push_back(scale * input(q, i));
      return v;
    };
    for (int run = 1; run <= 3; ++run) {
      std::vector<float> x, y;
      for (double v : vec(r, run)) x.push_back(static_cast<float>(v));
      for (double v : vec(r, 1)) y.push_back(static_cast<float>(v));
      NamedTensors out = model.run({{"x", test::f32({4}, x)}, {"y", test::f32({4}, y)}});
      std::map<std::string, std::vector<double>> want;
      for (int64_t i = 0; i < 4; ++i) {
        double sum = 0, max = -1e30;
        for (int q = 0; q < 3; ++q) {
          sum += run * input(q, i);
          max = std::max(max, input(q, i) * input(q, i));
        }
        want["a"].push_back(sum);
        want["c"].push_back(sum + max);
      }
      for (int q = 0; q < 3; ++q)
        for (int64_t i = 0; i < 4; ++i) want["g"].push_back(input(q, i) * input(q, i) + input(q, i));
      for (const auto& [name, values] : want) {
        const std::vector<double> got = test::values(out.at(name));
        for (size_t i = 0; i < values.size(); ++i)
          if (std::abs(got[i] - values[i]) > 1e-4 * (1 + std::abs(values[i])))
            throw std::runtime_error(fmt::format("rank {} run {}: {} = {}, want {}", r, run, name,
                                                 fmt::join(got, ", "), fmt::join(values, ", ")));
      }
    }
  });
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(results[r].exit_code, 0) << "rank " << r << ": " << results[r].message;
}

// A partition the job's size does not divide is named at the collective; an unknown communicator
// and a grouped Send are refused when the graph is read.
TEST(CollectiveGroups, BadCommunicatorsAreNamed) {
  std::vector<RankResult> results = run_ranks(4, [](int) {
    Session session(test::cpu_target());
    CompiledModel model = session.compile(parse_graph(
        "graph @g(%x: f32[2]) {\n  %y = AllReduce(%x) {comm = \"block:3\"} : f32[2]\n  return %y\n}\n",
        "g.rlx"));
    model.run({{"x", test::f32({2}, {1, 2})}});
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(results[r].exit_code, 1);
    EXPECT_NE(results[r].message.find("communicator \"block:3\""), std::string::npos)
        << results[r].message;
    EXPECT_NE(results[r].message.find("4 ranks do not divide evenly"), std::string::npos)
        << results[r].message;
  }
  for (const char* bad : {"AllReduce(%x) {comm = \"ring\"}", "Send(%x) {comm = \"block:2\", peer = 1}"}) {
    try {
      parse_graph(fmt::format("graph @g(%x: f32[2]) {{\n  %y = {} : f32[2]\n  return %y\n}}\n", bad));
      FAIL() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("communicator"), std::string::npos) << e.what();
    }
  }
}

TEST(CollectiveFailure, AKilledRankEndsTheOthersFastNamingTheCollective) {
  // Rank 2 dies after a first AllReduce with the others; ranks 0 and 1 reach a second one that
  // needs it. The timeout is long (30 s): failing within a few seconds shows the closed
  // connection ended them, not it.
  const auto start = Clock::now();
  std::vector<RankResult> results = run_ranks(
      3,
      [](int r) {
        Session session(test::cpu_target());
        CompiledModel model = session.compile(parse_graph(
            "graph @g(%x: f32[4]) {\n  %s = AllReduce(%x) {reduce = \"sum\"} : f32[4]\n"
            "  return %s\n}\n",
            "g.rlx"));
        model.run({{"x", test::f32({4}, {1, 2, 3, 4})}});
        if (r == 2) ::raise(SIGKILL);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        model.run({{"x", test::f32({4}, {1, 2, 3, 4})}});
      },
      30);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(results[2].exit_code, -1);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].exit_code, 1) << "rank " << r << " should have failed";
    EXPECT_NE(results[r].message.find(fmt::format("rank {} of 3", r)), std::string::npos)
        << results[r].message;
    EXPECT_NE(results[r].message.find("AllReduce"), std::string::npos) << results[r].message;
  }
  EXPECT_LT(seconds, 15.0) << "the surviving ranks waited for the timeout instead of failing fast";
}

TEST(CollectiveFailure, AMismatchedWorldSizeIsNamed) {
  std::vector<RankResult> results = run_ranks(2, [](int) {
    Session session(test::cpu_target());
    CompiledModel model = session.compile(parse_graph(
        "graph @g(%x: f32[2]) {\n  %y = AllGather(%x) {world = 3} : f32[6]\n  return %y\n}\n",
        "g.rlx"));
    model.run({{"x", test::f32({2}, {1, 2})}});
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].exit_code, 1);
    EXPECT_NE(results[r].message.find("built for a communicator of 3 ranks, and this job has 2"),
              std::string::npos)
        << results[r].message;
  }
}

TEST(CollectiveRefusals, TheIbverbsTransportWithoutAnRdmaDeviceIsReported) {
  try {
    test::TempDir dir;
    test::cpu_target()->open_channel(
        {0, 2, fmt::format("file://{}?transport=ibverbs", dir.path().string())});
    FAIL() << "the ibverbs transport opened, which rlx's collectives cannot use";
  } catch (const Error& e) {
    // Without RDMA hardware (this machine) the device is named missing; with it, the transport's
    // lack of unbound buffers.
    EXPECT_NE(std::string(e.what()).find("ibverbs"), std::string::npos) << e.what();
  }
}

TEST(CollectiveRefusals, NoChannelAndOtherTargetsAreRefusedByName) {
  const std::string ir =
      "graph @g(%x: f32[4]) {\n  %s = AllReduce(%x) {reduce = \"sum\"} : f32[4]\n  return %s\n}\n";
  try {
    test::run_text(ir, {{"x", test::f32({4}, {1, 2, 3, 4})}}, test::cpu_target());
    FAIL() << "an AllReduce ran without ranks";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--nproc"), std::string::npos) << e.what();
  }
  std::shared_ptr<Target> other;
  try {
    other = test::target_named("gpu");
  } catch (const std::exception& e) {
    GTEST_SKIP() << "the gpu target is not loadable here: " << e.what();
  }
  const std::string err = test::compile_error(ir, other);
  EXPECT_NE(err.find("AllReduce"), std::string::npos) << err;
}

}  // namespace
}  // namespace rlx
