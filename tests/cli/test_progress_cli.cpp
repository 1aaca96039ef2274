// The progress line, --quiet, --target auto and the software-device notes, as a user at a
// terminal sees them: stderr on a pseudo-terminal (process.h's run_in_terminal) or on a pipe.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_fixture.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

using ::testing::Not;

constexpr const char* kSlowCompileTask = "cpu: compiling the generated kernels with slow-cc";

class ProgressCliTest : public CliTest {
 protected:
  // A C compiler that takes 1.5 s before doing the real work: longer than the line's 0.7 s delay.
  std::map<std::string, std::optional<std::string>> slow_compiler_env() {
    fs::path cc = write("slow-cc",
                        "#!/bin/sh\n"
                        "if [ \"$1\" = --version ]; then exec cc --version; fi\n"
                        "sleep 1.5\n"
                        "exec cc \"$@\"\n");
    fs::permissions(cc, fs::perms::owner_all);
    return {{"RLX_CC", cc.string()},
            {"RLX_CPU_KERNELS", "compiled"},
            {"RLX_CACHE_DIR", (dir_ / "cache").string()},
            {"XDG_DATA_HOME", (dir_ / "no-user-data").string()},
            {"XDG_DATA_DIRS", (dir_ / "no-system-data").string()},
            {"RLX_PLUGIN_PATH", std::nullopt},
            {"RLX_DISABLE_PLUGINS", std::nullopt}};
  }

  fs::path inputs() {
    fs::path in = dir_ / "in.safetensors";
    write_safetensors(in, {{"x", Tensor::from<float>(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6})},
                           {"w", Tensor::from<float>(DType::kF32, {2, 3}, {1, 1, 1, 1, 1, 1})}});
    return in;
  }

  std::vector<std::string> run_args(const std::string& target) {
    return {"run", small_model().string(), "-t", target, "-i", inputs().string(), "--json"};
  }

  ProcessResult on_terminal(const std::vector<std::string>& args,
                            std::map<std::string, std::optional<std::string>> env) {
    test::TerminalResult t =
        test::run_in_terminal(RLX_BINARY, args, env, test::TerminalSide::kStderr, 160);
    return {t.exit_code, t.piped, t.terminal()};
  }

  // Device drivers (the Vulkan loader's ICDs, EGL's vendors) are found under XDG_DATA_DIRS,
  // which the fixture points at an empty folder: this gives them the XDG default. rlx's own
  // plugins from the build tree still come first in its search order.
  static std::map<std::string, std::optional<std::string>> system_device_env() {
    return {{"XDG_DATA_DIRS", "/usr/local/share:/usr/share"}};
  }

  // The targets of `rlx --list-targets --json`, by name.
  std::map<std::string, json::Value> listed_targets(
      const std::map<std::string, std::optional<std::string>>& env = {}) {
    ProcessResult r = rlx({"--list-targets", "--json"}, env);
    EXPECT_EQ(r.exit_code, 0) << dump(r);
    std::map<std::string, json::Value> out;
    json::Value doc = parse_json(r);
    if (const json::Value* targets = doc.find("targets"); targets && targets->as_array())
      for (const json::Value& t : *targets->as_array()) out[*t.find("name")->as_string()] = t;
    return out;
  }
};

// (x + w) * x for the inputs above, worked by hand.
void expect_small_model_result(const ProcessResult& r) {
  json::Value doc = parse_json(r);
  const json::Value* outputs = doc.find("outputs");
  ASSERT_NE(outputs, nullptr) << dump(r);
  const json::Value* y = find_named(*outputs, "y");
  ASSERT_NE(y, nullptr) << dump(r);
  std::vector<double> got;
  for (const json::Value& row : *y->find("values")->as_array())
    for (const json::Value& v : *row.as_array()) got.push_back(v.as_number()->value);
  EXPECT_EQ(got, (std::vector<double>{2, 6, 12, 20, 30, 42})) << dump(r);
}

TEST_F(ProgressCliTest, ASlowCompileShowsAProgressLineOnATerminalAndErasesIt) {
  ProcessResult r = on_terminal(run_args("cpu"), slow_compiler_env());
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, HasSubstr(kSlowCompileTask)) << dump(r);
  // Drawn from the line's start with the elapsed seconds, and erased at the end.
  EXPECT_THAT(r.err, HasSubstr("\r")) << dump(r);
  EXPECT_THAT(r.err, ::testing::ContainsRegex("[0-9]+\\.[0-9]s")) << dump(r);
  EXPECT_THAT(r.err, ::testing::EndsWith("\r\x1b[K")) << dump(r);
  // stdout is the JSON result alone.
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << dump(r);
  expect_small_model_result(r);
}

TEST_F(ProgressCliTest, NoProgressLineWhenStderrIsAPipe) {
  ProcessResult r = rlx(run_args("cpu"), slow_compiler_env());
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, Not(HasSubstr("compiling the generated kernels"))) << dump(r);
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << dump(r);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << dump(r);
}

TEST_F(ProgressCliTest, QuietSilencesTheProgressLine) {
  std::vector<std::string> args = run_args("cpu");
  args.push_back("--quiet");
  ProcessResult r = on_terminal(args, slow_compiler_env());
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_EQ(r.err, "") << dump(r);
}

TEST_F(ProgressCliTest, QuickWorkDrawsNothingEvenOnATerminal) {
  auto env = slow_compiler_env();
  env.erase("RLX_CC");
  env["RLX_CPU_KERNELS"] = "interpret";
  ProcessResult r = on_terminal(run_args("cpu"), env);
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_EQ(r.err, "") << dump(r);
}

TEST_F(ProgressCliTest, ListTargetsJsonGivesEveryTargetItsDevice) {
  std::map<std::string, json::Value> targets = listed_targets();
  ASSERT_TRUE(targets.count("cpu"));
  for (const auto& [name, t] : targets) {
    const json::Value* device = t.find("device");
    ASSERT_NE(device, nullptr) << name;
    if (device->is_null()) continue;
    EXPECT_EQ(*t.find("status")->as_string(), "available") << name;
    ASSERT_NE(device->find("software"), nullptr) << name;
    ASSERT_NE(device->find("software")->as_bool(), nullptr) << name;
    const std::string device_name = *device->find("name")->as_string();
    EXPECT_FALSE(device_name.empty()) << name;
    // Mesa's and Google's software rasterizers announce themselves in the device name.
    if (device_name.find("llvmpipe") != std::string::npos ||
        device_name.find("SwiftShader") != std::string::npos) {
      EXPECT_TRUE(*device->find("software")->as_bool()) << name << ": " << device_name;
    }
  }
}

// The ranking of docs/user-guide.md ("Choosing a target"), from the listing: a hardware GPU
// target when one is available, else cpu.
TEST_F(ProgressCliTest, TargetAutoChoosesByTheRankingAndSaysWhy) {
  const auto env = system_device_env();
  std::string expected = "cpu";
  std::vector<std::string> software;
  for (const auto& [name, t] : listed_targets(env)) {
    const json::Value* device = t.find("device");
    if (device && !device->is_null() && *device->find("software")->as_bool())
      software.push_back(name);
    if (device && !device->is_null() && !*device->find("software")->as_bool() &&
        *device->find("kind")->as_string() == "discrete gpu") {
      expected = name;
      break;
    }
  }
  ProcessResult r = rlx(run_args("auto"), env);
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, HasSubstr(fmt::format("rlx: --target auto: chose {}, because", expected)))
      << dump(r);
  if (expected == "cpu") {
    EXPECT_THAT(r.err, HasSubstr("no target here runs on a hardware GPU")) << dump(r);
    for (const std::string& name : software)
      EXPECT_THAT(r.err,
                  ::testing::ContainsRegex("faster than software devices \\(.*" + name + " on "))
          << dump(r);
    expect_small_model_result(r);
  }
  ProcessResult quiet = rlx(
      [&] {
        auto a = run_args("auto");
        a.push_back("-q");
        return a;
      }(),
      env);
  ASSERT_EQ(quiet.exit_code, 0) << dump(quiet);
  // (Only rlx's own notes: a device library may still print on stderr while probed.)
  EXPECT_THAT(quiet.err, Not(HasSubstr("rlx: "))) << dump(quiet);
}

TEST_F(ProgressCliTest, ARunOnLavapipeSaysItIsASoftwareDevice) {
  const auto env = system_device_env();
  std::map<std::string, json::Value> targets = listed_targets(env);
  if (!targets.count("vulkan") || *targets["vulkan"].find("status")->as_string() != "available")
    GTEST_SKIP() << "vulkan is not available here: "
                 << (targets.count("vulkan") ? *targets["vulkan"].find("detail")->as_string()
                                             : std::string("its plugin is not built"));
  const json::Value* device = targets["vulkan"].find("device");
  ASSERT_TRUE(device && !device->is_null());
  const std::string device_name = *device->find("name")->as_string();
  if (device_name.find("llvmpipe") == std::string::npos)
    GTEST_SKIP() << "vulkan runs on " << device_name << ", not lavapipe";
  EXPECT_TRUE(*device->find("software")->as_bool());
  EXPECT_EQ(*device->find("software_name")->as_string(), "lavapipe");

  ProcessResult r = rlx(run_args("vulkan"), env);
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("rlx: vulkan runs on lavapipe (" + device_name +
                               "), a software implementation on the CPU; expect it slower than "
                               "--target cpu"))
      << dump(r);
  expect_small_model_result(r);
  ProcessResult text = rlx({"--list-targets"}, env);
  EXPECT_THAT(text.out, HasSubstr(device_name + " (software: lavapipe)")) << dump(text);
}

}  // namespace
}  // namespace rlx::cli
