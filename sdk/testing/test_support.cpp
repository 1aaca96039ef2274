#include "test_support.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/registry/registry.h"

namespace rlx::test {

namespace {

// The targets by name: those loaded through the registry, and those a test program provides.
std::map<std::string, std::shared_ptr<Target>>& named_targets() {
  // Never destroyed, like the CLI's registry: unloading the plugin at exit while oneTBB worker
  // threads may still run its code would crash after the tests passed.
  static auto* targets = new std::map<std::string, std::shared_ptr<Target>>;
  return *targets;
}

}  // namespace

void provide_target(const std::string& name, std::shared_ptr<Target> target) {
  named_targets()[name] = std::move(target);
}

std::shared_ptr<Target> target_named(const std::string& name) {
  auto* targets = &named_targets();
  auto it = targets->find(name);
  if (it != targets->end()) return it->second;
  registry::Options o;
  // RLX_TEST_PLUGIN_DIR is a ':'-separated list (rlx_add_target_tests: the target's build folder,
  // then the installed rlx's plugins).
  std::stringstream dirs(RLX_TEST_PLUGIN_DIR);
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty()) o.plugin_paths.push_back(dir);
  o.build_legality = false;
  return (*targets)[name] = registry::Registry::discover(o).target(name);
}

std::shared_ptr<Target> cpu_target() {
  return target_named("cpu");
}

namespace {

class CpuRefusing final : public Target {
 public:
  explicit CpuRefusing(Refusal refuse) : refuse_(std::move(refuse)) {}
  std::string name() const override { return cpu_->name(); }
  Verdict claim_native(const NodeSignature& s) const override {
    if (auto why = refuse_(s, true)) return Verdict::no(*why);
    return cpu_->claim_native(s);
  }
  Verdict accepts_primitive(const NodeSignature& s) const override {
    if (auto why = refuse_(s, false)) return Verdict::no(*why);
    return cpu_->accepts_primitive(s);
  }
  Verdict can_execute() const override { return cpu_->can_execute(); }
  std::unique_ptr<Executable> compile(const lir::Program& p) override { return cpu_->compile(p); }
  std::vector<Artifact> emit(const lir::Program& p, const std::filesystem::path& d) override {
    return cpu_->emit(p, d);
  }
  std::shared_ptr<Device> device() override { return cpu_->device(); }

 private:
  Refusal refuse_;
  std::shared_ptr<Target> cpu_ = cpu_target();
};

}  // namespace

std::shared_ptr<Target> cpu_refusing(Refusal refuse) {
  return std::make_shared<CpuRefusing>(std::move(refuse));
}

std::shared_ptr<Target> target_under_test() {
  const char* name = std::getenv("RLX_TEST_TARGET");
  return name && *name ? target_named(name) : cpu_target();
}

NamedTensors run_text(const std::string& ir, const NamedTensors& inputs,
                      std::shared_ptr<Target> target) {
  Graph g = parse_graph(ir, "test.rlx");
  Session s(std::move(target));
  CompiledModel model = s.compile(g);
  NamedTensors fresh = model.run(inputs);
  // Every suite also checks the steady-state path: outputs written in place into tensors that
  // hold garbage (all bits set: NaN for floats, -1 for integers), as a loop that reuses its
  // output map runs. A kernel that leaves an element unwritten or accumulates into its output
  // shows up here.
  NamedTensors reused;
  for (const auto& [name, t] : fresh) {
    Tensor garbage(t.dtype(), t.shape());
    std::memset(garbage.data(), 0xFF, garbage.nbytes());
    reused[name] = garbage;
  }
  model.run(inputs, reused);
  expect_all_close(fresh, reused, 1e-6, "a second run writing into reused outputs");
  return fresh;
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.scalar_at(i));
  return v;
}

Tensor f32(std::vector<int64_t> shape, std::vector<float> v) {
  return Tensor::from<float>(DType::kF32, std::move(shape), v);
}

std::string compile_error(const std::string& ir, std::shared_ptr<Target> target) {
  try {
    Session s(std::move(target));
    s.compile(parse_graph(ir, "test.rlx"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Tensor uniform_f32(std::mt19937& rng, std::vector<int64_t> shape, float bound) {
  std::uniform_real_distribution<float> u(-bound, bound);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return f32(std::move(shape), std::move(v));
}

void expect_all_close(const NamedTensors& want, const NamedTensors& got, double rel_tol,
                      const std::string& what) {
  for (const auto& [name, t] : want) {
    auto it = got.find(name);
    ASSERT_NE(it, got.end()) << what << " has no output " << name;
    auto w = values(t), g = values(it->second);
    ASSERT_EQ(w.size(), g.size()) << what << " " << name;
    for (size_t i = 0; i < w.size(); ++i) {
      if (std::isnan(w[i]))
        EXPECT_TRUE(std::isnan(g[i])) << what << " " << name << "[" << i << "] = " << g[i];
      else if (std::isinf(w[i]))
        EXPECT_EQ(g[i], w[i]) << what << " " << name << "[" << i << "]";
      else
        EXPECT_NEAR(g[i], w[i], rel_tol * std::max(1.0, std::fabs(w[i])))
            << what << " " << name << "[" << i << "]";
    }
  }
}

TempDir::TempDir() {
  std::string t = (std::filesystem::temp_directory_path() / "rlx-test-XXXXXX").string();
  if (!mkdtemp(t.data())) throw Error(ErrorKind::kUser, "cannot make a temporary folder " + t);
  path_ = t;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Emitted::Emitted(const std::string& ir, std::shared_ptr<Target> target) {
  Session s(target);
  artifacts_ = target->emit(s.compile(parse_graph(ir, "test.rlx")).lir_for({}), dir_.path());
}

void check_in_place_cache_update(std::shared_ptr<Target> target) {
  Session session(target);
  CompiledModel m = session.compile(
      parse_graph(R"(graph @t(%past: f32[1,2,4,3], %position: i64[1], %k: f32[1,2,1,3]) {
  %present = scatter(%past, %position, %k) {axis = 2, reduce = "none"} : f32[1,2,4,3]
  %sum = reduce_sum(%present) {axes = [2]} : f32[1,2,3]
  return %present, %sum
}
)"));
  // Step p writes k = p + 1 (head 0) and -(p + 1) (head 1) into slot p of a zero cache.
  auto k_of = [](int64_t p) {
    const float v = static_cast<float>(p + 1);
    return f32({1, 2, 1, 3}, {v, v, v, -v, -v, -v});
  };
  auto sums_after = [](int64_t p) {  // 1 + 2 + ... + (p + 1) in each lane, head 1 negated
    const double s = static_cast<double>((p + 1) * (p + 2) / 2);
    return std::vector<double>{s, s, s, -s, -s, -s};
  };
  Tensor cache(DType::kF32, {1, 2, 4, 3});
  std::memset(cache.data(), 0, cache.nbytes());
  NamedTensors in{{"past", cache}}, out;
  for (int64_t p = 0; p < 3; ++p) {
    out["present"] = in.at("past");
    in["position"] = Tensor::from<int64_t>(DType::kI64, {1}, {p});
    in["k"] = k_of(p);
    m.run(in, out);
    EXPECT_EQ(out.at("present").data(), cache.data()) << "step " << p << ": the cache was copied";
    EXPECT_EQ(values(out.at("sum")), sums_after(p)) << "step " << p;
  }
  std::vector<double> want(24, 0);
  for (int64_t p = 0; p < 3; ++p)
    for (int64_t d = 0; d < 3; ++d) want[p * 3 + d] = p + 1, want[12 + p * 3 + d] = -(p + 1);
  EXPECT_EQ(values(cache), want);

  std::shared_ptr<Device> device = m.device();
  if (!device) return;
  std::memset(cache.data(), 0, cache.nbytes());
  NamedDeviceTensors dev_in{{"past", DeviceTensor::upload(device, cache)}}, dev_out;
  NamedTensors host_in, host_out;
  const void* handle = dev_in.at("past").buffer().handle;
  for (int64_t p = 0; p < 3; ++p) {
    dev_out["present"] = dev_in.at("past");
    host_in["position"] = Tensor::from<int64_t>(DType::kI64, {1}, {p});
    host_in["k"] = k_of(p);
    m.run(host_in, dev_in, host_out, dev_out);
    EXPECT_EQ(dev_out.at("present").buffer().handle, handle)
        << "device step " << p << ": the cache was copied";
    EXPECT_EQ(values(host_out.at("sum")), sums_after(p)) << "device step " << p;
  }
  EXPECT_EQ(values(dev_in.at("past").download()), want);
}

size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace rlx::test
