// The fixture and helpers of the `rlx` CLI tests (cli_test.cpp, test_info_cli.cpp): a fresh
// folder per test, rlx run with only the build tree's plugins, and readers for its --json.
#pragma once
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "process.h"
#include "rlx/core/json.h"

namespace rlx::cli {

namespace fs = std::filesystem;
using test::ProcessResult;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Shows the whole exchange when an expectation fails.
inline std::string dump(const ProcessResult& r) {
  return fmt::format("exit {}\n--- stdout\n{}--- stderr\n{}", r.exit_code, r.out, r.err);
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           fmt::format("rlx-cli-{}-{}-{}", info->test_suite_name(), info->name(), getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Runs rlx with an environment that sees only the build tree's plugins (found next to the
  // binary), so plugins installed on the machine cannot change the results.
  ProcessResult rlx(std::vector<std::string> args,
                    std::map<std::string, std::optional<std::string>> env = {},
                    const std::optional<std::string>& input = std::nullopt) {
    return test::run_process(RLX_BINARY, args, rlx_environment(std::move(env)), input);
  }

  // The environment rlx() runs with, `env` applied on top.
  test::Environment rlx_environment(test::Environment env) {
    std::map<std::string, std::optional<std::string>> e = {
        {"XDG_DATA_HOME", (dir_ / "no-user-data").string()},
        {"XDG_DATA_DIRS", (dir_ / "no-system-data").string()},
        {"RLX_PLUGIN_PATH", std::nullopt},
        {"RLX_DISABLE_PLUGINS", std::nullopt},
    };
    for (auto& [k, v] : env) e[k] = v;
    return e;
  }

  fs::path write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p;
  }

  // y = (x + w) * x on f32[2,3]: two nodes, two inputs, values checkable by hand.
  fs::path small_model() {
    return write("small.rlx",
                 "graph @small(%x: f32[2,3], %w: f32[2,3]) {\n"
                 "  %s = Add(%x, %w) : f32[2,3]\n"
                 "  %y = Mul(%s, %x) : f32[2,3]\n"
                 "  return %y\n"
                 "}\n");
  }

  fs::path dir_;
};

inline json::Value parse_json(const ProcessResult& r) {
  try {
    return json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "stdout is not JSON: " << e.what() << "\n" << dump(r);
    return {};
  }
}

inline const json::Value* find_named(const json::Value& array, const std::string& name) {
  if (!array.as_array()) return nullptr;
  for (const json::Value& v : *array.as_array())
    if (const json::Value* n = v.find("name"); n && n->as_string() && *n->as_string() == name)
      return &v;
  return nullptr;
}

inline std::string str(const json::Value* v) {
  return v && v->as_string() ? *v->as_string() : std::string("<missing>");
}

}  // namespace rlx::cli
