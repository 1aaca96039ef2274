// What is particular to the webgpu target: its refusals (8/16-bit integers always; i64 and f64
// where the device lacks wgpu-native's extensions, or when RLX_WEBGPU_PORTABLE asks for what
// browsers run), NaN through select-based max/min, the emitted WGSL, and the generated ES module
// run in headless Chromium against the cpu. What it shares with the other GPU-like targets (the
// cpu primitive suites run on webgpu, float ops at every dtype it accepts, packed bool/f16
// neighbours, index errors, mixed programs, the model fixtures) is registered by
// webgpu_test_main.cpp from sdk/testing.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <thread>

#include "model_support.h"
#include "target_suite.h"
#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/json.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx {
namespace {

using test::f32;
using test::run_text;
using test::values;

std::shared_ptr<Target> webgpu() { return test::target_named("webgpu"); }

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) unsetenv(name_);
    else setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

TEST(WebGpuTarget, RefusesNarrowIntegersWithTheReason) {
  std::string msg = test::compile_error("graph @t(%x: i16[4], %y: i16[4]) {\n  %z = add(%x, %y) : i16[4]\n  return %z\n}\n",
                                        webgpu());
  EXPECT_NE(msg.find("WGSL has no 8- or 16-bit integer types, so webgpu cannot compute the i16 values of add"),
            std::string::npos)
      << msg;
}

// Browsers' WGSL has no i64 or f64: with RLX_WEBGPU_PORTABLE the target's kernels hold neither,
// even where wgpu-native's extensions would run them. i64 nodes then run on i32 words
// (split-i64, exact) and what has no word form is refused naming the node; f64 is refused by
// node and dtype, never narrowed.
TEST(WebGpuTarget, PortableRefusesI64AndF64NamingTheNode) {
  ScopedEnv portable("RLX_WEBGPU_PORTABLE", "1");
  std::string msg = test::compile_error(
      "graph @t(%x: i64[4], %i: i32[2], %u: i64[2]) {\n"
      "  %q = scatter(%x, %i, %u) {axis = 0, reduce = \"add\"} : i64[4]\n  return %q\n}\n",
      webgpu());
  EXPECT_NE(msg.find("WGSL has no 64-bit integers without wgpu-native's shader-int64 feature (RLX_WEBGPU_PORTABLE "
                     "asks for what browsers run), so webgpu cannot hold the i64 values of scatter"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("split-i64 has no i32-pair form of scatter"), std::string::npos) << msg;
  EXPECT_NE(msg.find("%q"), std::string::npos) << "the node is named: " << msg;
  EXPECT_EQ(test::compile_error(
                "graph @t(%x: i64[4], %y: i64[4]) {\n  %sum = add(%x, %y) : i64[4]\n  return %sum\n}\n", webgpu()),
            "");
  msg = test::compile_error("graph @t(%x: f64[4]) {\n  %twice = add(%x, %x) : f64[4]\n  return %twice\n}\n", webgpu());
  EXPECT_NE(msg.find("so webgpu cannot hold the f64 values of add"), std::string::npos) << msg;
  EXPECT_NE(msg.find("%twice"), std::string::npos) << msg;
}

// NaN propagates through max/min (select-based in WGSL) and sign keeps -0, as on the cpu.
TEST(WebGpuTarget, NanAndSignedZeroFollowTheRenderer) {
  const char* ir = R"(graph @t(%x: f32[4], %y: f32[4]) {
  %mx = max(%x, %y) : f32[4]
  %mn = min(%x, %y) : f32[4]
  %sg = sign(%x) : f32[4]
  %r = reduce_max(%x) {axes = [0]} : f32[]
  return %mx, %mn, %sg, %r
}
)";
  const float nan = std::numeric_limits<float>::quiet_NaN();
  NamedTensors in = {{"x", f32({4}, {nan, 1, -0.0f, 2})}, {"y", f32({4}, {1, nan, 0, -3})}};
  NamedTensors got = run_text(ir, in, webgpu());
  test::expect_all_close(run_text(ir, in, test::cpu_target()), got, 0);
  // expect_all_close has -0 == 0, so the sign bit of sign(-0) is checked on its own.
  const float sg = got.at("sg").as<float>()[2];
  EXPECT_TRUE(sg == 0 && std::signbit(sg)) << "sign(-0) must be -0, got " << sg;
}

// A fused kernel binding more storage buffers than the device allows (32 on lavapipe) either runs
// (a device with a higher limit) or fails with wgpu's validation message turned into an rlx
// error naming the kernel and the limit: the device's errors never pass silently.
TEST(WebGpuTarget, DeviceErrorsBecomeRlxErrors) {
  const int n = 40;
  std::string params, body, prev = "%x0";
  NamedTensors in;
  for (int i = 0; i < n; ++i) {
    params += fmt::format("{}%x{}: f32[4]", i ? ", " : "", i);
    in[fmt::format("x{}", i)] = f32({4}, {float(i), 1, 2, 3});
    if (i == 0) continue;
    body += fmt::format("  %s{0} = add({1}, %x{0}) : f32[4]\n", i, prev);
    prev = fmt::format("%s{}", i);
  }
  const std::string ir = fmt::format("graph @t({}) {{\n{}  return {}\n}}\n", params, body, prev);
  NamedTensors got;
  try {
    got = run_text(ir, in, webgpu());
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("webgpu: creating the pipeline of kernel k0_add"), std::string::npos) << msg;
    EXPECT_NE(msg.find("max_storage_buffers_per_shader_stage"), std::string::npos) << msg;
    return;
  }
  test::expect_all_close(run_text(ir, in, test::cpu_target()), got, 0);
}

// The emitted WGSL is what runs (one section per kernel); the ES module beside it refuses, when
// run, what browsers lack (kEmitProgram's indices are i64).
TEST(WebGpuTarget, EmitsWgslAndAnEsModule) {
  test::Emitted e(test::kEmitProgram, webgpu());
  std::vector<std::string> files;
  for (const Artifact& a : e.artifacts()) files.push_back(a.path);
  EXPECT_EQ(files, (std::vector<std::string>{"webgpu_kernels.wgsl", "model.mjs", "weights.bin"}));
  const std::string wgsl = e.text("webgpu_kernels.wgsl");
  for (const char* kernel : {"k0_dot_general", "k1_gather"})
    EXPECT_NE(wgsl.find(fmt::format("//@rlx-kernel {}\n", kernel)), std::string::npos) << wgsl;
  EXPECT_NE(wgsl.find("@group(0) @binding(1) var<storage, read> ids: array<i64>;"), std::string::npos) << wgsl;
  EXPECT_NE(wgsl.find("@compute @workgroup_size(64)"), std::string::npos) << wgsl;
  EXPECT_NE(wgsl.find("//@rlx-kernel k0_dot_general\nvar<workgroup> rlx_sa: array<f32, 528>;"),
            std::string::npos)
      << wgsl;
  const std::string js = e.text("model.mjs");
  EXPECT_NE(js.find("export async function run(inputs, options = {})"), std::string::npos);
  EXPECT_NE(js.find("uses i64, which WebGPU in browsers lacks"), std::string::npos) << js.substr(0, 3000);
}

// --- the ES module in headless Chromium

std::string find_on_path(const std::vector<std::string>& names) {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::string p = path;
  for (const std::string& n : names) {
    size_t at = 0;
    while (at <= p.size()) {
      size_t end = p.find(':', at);
      if (end == std::string::npos) end = p.size();
      std::filesystem::path f = std::filesystem::path(p.substr(at, end - at)) / n;
      if (access(f.c_str(), X_OK) == 0) return f.string();
      at = end + 1;
    }
  }
  return "";
}

pid_t spawn(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // its own process group, so its children (Chromium's) end with it
    FILE* f = std::fopen(log.c_str(), "w");
    if (f) {
      dup2(fileno(f), 1);
      dup2(fileno(f), 2);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

void stop(pid_t pid) {
  if (pid <= 0) return;
  kill(-pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// Serves a folder over http and stores the body of a POST to /result (the page's report).
constexpr const char* kServer = R"(import functools, http.server, os, sys
root, result = sys.argv[1], sys.argv[2]
class Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, '.mjs': 'text/javascript'}
    def do_POST(self):
        data = self.rfile.read(int(self.headers.get('Content-Length', 0)))
        open(result + '.tmp', 'wb').write(data)
        os.replace(result + '.tmp', result)
        self.send_response(200)
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(Handler, directory=root))
open(root + '/port.txt', 'w').write(str(server.server_address[1]))
server.serve_forever()
)";

// Serves `dir` (its index.html posts a report to /result) to headless Chromium on SwiftShader's
// WebGPU and returns the report; fails the test when nothing comes within 120 s.
std::string run_page_in_chromium(const std::string& chromium, const std::string& python,
                                 const std::filesystem::path& dir) {
  std::ofstream(dir / "server.py") << kServer;
  const auto result = dir / "result.json";
  pid_t server = spawn({python, (dir / "server.py").string(), dir.string(), result.string()}, dir / "server.log");
  std::string port;
  for (int i = 0; i < 200 && port.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    port = test::read_file(dir / "port.txt");
  }
  if (port.empty()) {
    stop(server);
    ADD_FAILURE() << "the http server did not start: " << test::read_file(dir / "server.log");
    return "";
  }
  pid_t browser = spawn({chromium, "--headless=new", "--no-sandbox", "--enable-unsafe-webgpu",
                         "--use-webgpu-adapter=swiftshader", "--user-data-dir=" + (dir / "profile").string(),
                         fmt::format("http://127.0.0.1:{}/index.html", port)},
                        dir / "chromium.log");
  std::string report;
  for (int i = 0; i < 1200 && report.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    report = test::read_file(result);
  }
  stop(browser);
  stop(server);
  if (report.empty())
    ADD_FAILURE() << "Chromium reported nothing within 120 s; its log:\n" << test::read_file(dir / "chromium.log");
  return report;
}

// Runs model.mjs on the inputs in inputs.json and posts the outputs (as plain arrays) or the error.
constexpr const char* kPage = R"(<!doctype html>
<script type="module">
import { run, signature } from './model.mjs';
const types = { f32: Float32Array, i32: Int32Array, f16: Uint16Array, bool: Uint8Array, c64: Float32Array };
let report;
try {
  const raw = await (await fetch('inputs.json')).json();
  const inputs = {};
  for (const [name, values] of Object.entries(raw)) inputs[name] = types[signature.inputs[name].dtype].from(values);
  const adapter = await navigator.gpu.requestAdapter();
  const outputs = await run(inputs);
  report = { adapter: adapter && adapter.info ? adapter.info.architecture : '', outputs: {} };
  for (const [name, a] of Object.entries(outputs)) report.outputs[name] = Array.from(a, Number);
} catch (e) {
  report = { error: String(e && e.stack || e) };
}
await fetch('/result', { method: 'POST', body: JSON.stringify(report) });
</script>
)";

// The causal Attention of 20 queries takes the tiled kernel, whose barriers Chromium's shader
// compiler (Tint) must prove uniform; c64 values travel as f32 pairs (split-complex).
constexpr const char* kBrowserProgram = R"(graph @t(%a: f32[2,3,4], %b: f32[2,4,5], %ids: i32[3], %h: f16[2,3], %x: f32[1,2,20,8], %z: c64[3]) {
  %d = dot_general(%a, %b) {lhs_batch = [0], lhs_contract = [2], rhs_batch = [0], rhs_contract = [1]} : f32[2,3,5]
  %m = reduce_max(%d) {axes = [2]} : f32[2,3]
  %t = tanh(%m) : f32[2,3]
  %r = reshape(%d) {shape = [6, 5]} : f32[6,5]
  %g = gather(%r, %ids) {axis = 0} : f32[3,5]
  %s = scatter(%r, %ids, %g) {axis = 0, reduce = "add"} : f32[6,5]
  %w = constant() {value = dense<f32[3,5]: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]>} : f32[3,5]
  %gw = mul(%g, %w) : f32[3,5]
  %hc = convert(%t) {dtype = f16} : f16[2,3]
  %hs = mul(%hc, %h) : f16[2,3]
  %p = lt(%m, %t) : bool[2,3]
  %o = Attention(%x, %x, %x) {mask = "causal"} : f32[1,2,20,8]
  %zz = mul(%z, %z) : c64[3]
  %za = abs(%z) : f32[3]
  return %s, %t, %gw, %hs, %p, %o, %zz, %za
}
)";

TEST(WebGpuTarget, EsModuleRunsInHeadlessChromiumLikeTheCpu) {
  std::string chromium = find_on_path({"chromium", "chromium-browser", "google-chrome"});
  if (const char* c = std::getenv("RLX_CHROMIUM")) chromium = c;
  std::string python = find_on_path({"python3"});
  if (chromium.empty()) GTEST_SKIP() << "no chromium on PATH (Debian's `chromium` package; or set RLX_CHROMIUM)";
  if (python.empty()) GTEST_SKIP() << "no python3 on PATH to serve the ES module";
  NamedTensors in = test::mixed_program_inputs();
  in["ids"] = Tensor::from<int32_t>(DType::kI32, {3}, {5, -6, 5});
  std::vector<float> x(320);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37 % 101) / 50.0 - 1.0);
  in["x"] = Tensor::from<float>(DType::kF32, {1, 2, 20, 8}, x);
  Tensor z(DType::kC64, {3});
  const float zv[] = {0.5f, -1.5f, 2.0f, 0.25f, -3.0f, 4.0f};
  std::copy(zv, zv + 6, z.as<float>());
  in["z"] = z;
  // c64 elements as their (real, imaginary) floats.
  auto count = [](const Tensor& t) { return t.dtype() == DType::kC64 ? 2 * t.numel() : t.numel(); };
  test::Emitted e(kBrowserProgram, webgpu());
  ASSERT_NE(e.text("model.mjs").find("unsupported: \"\""), std::string::npos) << "model.mjs refuses the program";
  const auto& dir = e.dir();
  // inputs.json: each input's elements (f16 as its bits).
  std::string inputs = "{";
  for (auto& [name, t] : in) {
    std::vector<std::string> v;
    for (int64_t i = 0; i < count(t); ++i) {
      if (t.dtype() == DType::kF16) v.push_back(std::to_string(t.as<uint16_t>()[i]));
      else if (t.dtype() == DType::kI32) v.push_back(std::to_string(t.as<int32_t>()[i]));
      else v.push_back(fmt::format("{}", t.as<float>()[i]));
    }
    inputs += fmt::format("{}\"{}\": [{}]", inputs.size() > 1 ? ", " : "", name, fmt::join(v, ", "));
  }
  std::ofstream(dir / "inputs.json") << inputs << "}";
  std::ofstream(dir / "index.html") << kPage;
  const std::string report = run_page_in_chromium(chromium, python, dir);
  if (report.empty()) return;
  json::Value r = json::parse(report);
  if (const json::Value* err = r.find("error")) FAIL() << "model.mjs failed in Chromium: " << *err->as_string();
  NamedTensors want = run_text(kBrowserProgram, in, test::cpu_target());
  const json::Value* outputs = r.find("outputs");
  ASSERT_NE(outputs, nullptr);
  for (auto& [name, t] : want) {
    const json::Value* got = outputs->find(name);
    ASSERT_NE(got, nullptr) << name;
    const json::Array& a = *got->as_array();
    ASSERT_EQ(static_cast<int64_t>(a.size()), count(t)) << name;
    std::vector<double> ref = values(t);
    if (t.dtype() == DType::kC64) ref.assign(t.as<float>(), t.as<float>() + count(t));
    for (size_t i = 0; i < a.size(); ++i) {
      double v = a[i].as_number()->value;
      if (t.dtype() == DType::kF16) v = f16_to_f32(static_cast<uint16_t>(v));
      double tol = t.dtype() == DType::kF16 ? 1e-3 : t.dtype() == DType::kBool ? 0 : 1e-5;
      EXPECT_NEAR(v, ref[i], tol * std::max(1.0, std::fabs(ref[i]))) << name << "[" << i << "]";
    }
  }
  std::printf("model.mjs ran in headless Chromium (WebGPU adapter: %s)\n",
              r.find("adapter") && r.find("adapter")->as_string() ? r.find("adapter")->as_string()->c_str() : "?");
}

// Runs each model.mjs under a folder named in models.json on its inputs.json (i64 values as
// BigInt64Array) and posts every model's outputs, or the first error.
constexpr const char* kFixturePage = R"(<!doctype html>
<script type="module">
const types = { f32: Float32Array, i32: Int32Array, bool: Uint8Array,
                i64: (v) => BigInt64Array.from(v, (x) => BigInt(x)) };
let report = { models: {} };
try {
  for (const name of await (await fetch('models.json')).json()) {
    const { run, signature } = await import(`./${name}/model.mjs`);
    const raw = await (await fetch(`${name}/inputs.json`)).json();
    const inputs = {};
    for (const [input, values] of Object.entries(raw)) {
      const T = types[signature.inputs[input].dtype];
      inputs[input] = T.from ? T.from(values) : T(values);
    }
    const outputs = await run(inputs);
    report.models[name] = {};
    for (const [output, a] of Object.entries(outputs)) report.models[name][output] = Array.from(a, Number);
  }
} catch (e) {
  report = { error: String(e && e.stack || e) };
}
await fetch('/result', { method: 'POST', body: JSON.stringify(report) });
</script>
)";

// The three model fixtures in headless Chromium, compiled for what browsers run (no 64-bit
// integers: their token ids, positions and shape arithmetic on i32 words), against the
// references: bert-tiny-onnx against ONNX Runtime, qwen3-tiny and llama-tiny prompt logits against
// transformers in float64.
TEST(WebGpuTarget, FixturesRunInHeadlessChromiumOnI32Words) {
  std::string chromium = find_on_path({"chromium", "chromium-browser", "google-chrome"});
  if (const char* c = std::getenv("RLX_CHROMIUM")) chromium = c;
  std::string python = find_on_path({"python3"});
  if (chromium.empty()) GTEST_SKIP() << "no chromium on PATH (Debian's `chromium` package; or set RLX_CHROMIUM)";
  if (python.empty()) GTEST_SKIP() << "no python3 on PATH to serve the ES module";
  if (Verdict v = webgpu()->can_execute(); !v.ok) GTEST_SKIP() << "webgpu cannot run here: " << v.reason;
  ScopedEnv portable("RLX_WEBGPU_PORTABLE", "1");
  struct Fixture {
    const char* name;
    std::filesystem::path model;
    const char* graph;
    std::vector<std::pair<std::string, std::string>> inputs;  // model input <- reference tensor
    const char* output;
    const char* reference;
    double bound;
  };
  RLX_FIXTURE(bert, "bert-tiny-onnx");
  RLX_FIXTURE(qwen, "qwen3-tiny");
  RLX_FIXTURE(llama, "llama-tiny");
  const std::vector<Fixture> fixtures = {
      {"bert", bert / "model.onnx", "", {{"input_ids", "input_ids"}, {"attention_mask", "attention_mask"},
                                         {"token_type_ids", "token_type_ids"}},
       "last_hidden_state", "last_hidden_state_ort", 3e-5},
      // SwiftShader's WGSL exp and inverseSqrt are as accurate as WGSL requires (a few ulp), not
      // correctly rounded: 1.5e-3 and 1.1e-3 measured on logits of size 4 (wgpu-native on
      // lavapipe: 5e-6).
      {"qwen3", qwen, "main", {{"input_ids", "prompts"}}, "logits", "prompt_logits_f64", 1e-2},
      {"llama", llama, "main", {{"input_ids", "prompts"}}, "logits", "prompt_logits_f64", 1e-2}};
  test::TempDir dir;
  std::vector<std::string> names;
  std::map<std::string, Tensor> want;
  for (const Fixture& f : fixtures) {
    const auto folder = f.model.extension() == ".onnx" ? f.model.parent_path() : f.model;
    TensorMap ref = read_safetensors(folder / "reference.safetensors");
    Model model = test::load_model(f.model);
    const Graph& g = *f.graph ? model.graph(f.graph) : model.graph();
    // The ES module runs static shapes: bind each symbol from the reference's input shapes.
    Bindings bind;
    std::string inputs = "{";
    for (auto& [input, key] : f.inputs) {
      const Tensor& t = ref.at(key);
      for (ValueId v : g.inputs) {
        if (g.values[v].name != input) continue;
        const Shape& s = g.type(v).shape;
        for (size_t d = 0; d < s.size(); ++d)
          if (!s[d].is_static()) bind[s[d].sym] = t.shape()[d];
      }
      std::vector<std::string> v;
      for (int64_t i = 0; i < t.numel(); ++i) v.push_back(std::to_string(t.as<int64_t>()[i]));
      inputs += fmt::format("{}\"{}\": [{}]", inputs.size() > 1 ? ", " : "", input, fmt::join(v, ", "));
    }
    const auto sub = dir.path() / f.name;
    std::filesystem::create_directories(sub);
    Session session(webgpu());
    webgpu()->emit(session.compile(g).lir_for(bind), sub);
    ASSERT_NE(test::read_file(sub / "model.mjs").find("unsupported: \"\""), std::string::npos)
        << f.name << ": model.mjs refuses the program";
    std::ofstream(sub / "inputs.json") << inputs << "}";
    names.push_back(fmt::format("\"{}\"", f.name));
    want[f.name] = ref.at(f.reference);
  }
  std::ofstream(dir.path() / "models.json") << "[" << fmt::format("{}", fmt::join(names, ", ")) << "]";
  std::ofstream(dir.path() / "index.html") << kFixturePage;
  const std::string report = run_page_in_chromium(chromium, python, dir.path());
  if (report.empty()) return;
  json::Value r = json::parse(report);
  if (const json::Value* err = r.find("error")) FAIL() << "the fixtures failed in Chromium: " << *err->as_string();
  for (const Fixture& f : fixtures) {
    const json::Value* m = r.find("models")->find(f.name);
    ASSERT_NE(m, nullptr) << f.name;
    const json::Value* got = m->find(f.output);
    ASSERT_NE(got, nullptr) << f.name << " " << f.output;
    const json::Array& a = *got->as_array();
    const std::vector<double> ref = values(want.at(f.name));
    ASSERT_EQ(a.size(), ref.size()) << f.name;
    double err = 0;
    std::vector<double> v(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      v[i] = a[i].as_number()->value;
      err = std::max(err, std::fabs(v[i] - ref[i]));
    }
    // Decoders: every position's most likely next token is the reference's, wherever the
    // reference's top two logits are further apart than the error allows.
    int64_t rows = 0, agree = 0;
    if (std::string(f.output) == "logits") {
      const int64_t vocab = want.at(f.name).shape().back();
      for (size_t row = 0; row < ref.size() / vocab; ++row) {
        auto top = [&](const std::vector<double>& x) {
          return std::max_element(x.begin() + row * vocab, x.begin() + (row + 1) * vocab) - x.begin();
        };
        std::vector<double> r(ref.begin() + row * vocab, ref.begin() + (row + 1) * vocab);
        std::nth_element(r.begin(), r.begin() + 1, r.end(), std::greater<double>());
        if (r[0] - r[1] <= 2 * f.bound) continue;
        ++rows;
        agree += top(v) == top(ref);
      }
      EXPECT_EQ(agree, rows) << f.name << ": the most likely tokens differ";
    }
    std::printf("%s in headless Chromium: %s max abs error %.3g (limit %g); top token equal at %lld of "
                "%lld positions\n", f.name, f.output, err, f.bound, static_cast<long long>(agree),
                static_cast<long long>(rows));
    EXPECT_LE(err, f.bound) << f.name;
  }
}

}  // namespace
}  // namespace rlx
