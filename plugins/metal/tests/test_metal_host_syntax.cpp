// The Metal host (src/metal_host.mm) as far as a machine without Apple's SDK can check it: clang++
// parses it as Objective-C++ under ARC, with the rules of Apple's runtime, against declarations
// of the Foundation and Metal API it uses (metal_api_stub/, written from Apple's documentation),
// and the target's Apple branch (metal_target.cpp with RLX_METAL_HOST) as C++. A host that stops
// parsing, calls a method, property, function or constant the declarations lack, or mixes a
// Metal object with a C pointer without a bridge fails here; the two control tests show that such
// mistakes do fail. Not checked: that the declarations match Apple's headers exactly, that Apple's
// toolchain compiles and links the host, and anything it does at run time. On Apple platforms the
// last tests run programs on the real device against the cpu target.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "metal_checks.h"
#include "rlx/core/error.h"
#include "rlx/sdk/process.h"
#include "target_suite.h"
#include "test_support.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;

const fs::path kSrc = RLX_METAL_SRC_DIR;
const fs::path kStub = fs::path(RLX_MSL_ON_CPU_DIR) / "metal_api_stub";

// clang++ ($RLX_CLANG, else on PATH), or "" when there is none.
std::string clang() {
  const char* env = std::getenv("RLX_CLANG");
  return sdk::find_executable(env && *env ? env : "clang++");
}

struct Parse {
  int rc = -1;
  std::string log;
};

// `clang++ -fsyntax-only` of `file` in `language`, with the stub first on the include path, then
// the codegen library's include folders and definitions (metal_host_flags.rsp, from CMake).
// Objective-C++ is parsed with Apple's runtime's rules (ARC needs a non-legacy runtime, which
// Linux's default is not) and -Werror, so an undeclared selector is an error as Apple's ARC
// makes it.
Parse parse(const std::string& cc, const fs::path& file, const std::string& language,
            const std::vector<std::string>& extra = {}) {
  // The warnings rlx_warnings() gives the library, as errors.
  std::vector<std::string> argv = {cc,           "-fsyntax-only", "-x",      language,
                                   "-std=c++20", "-Wall",         "-Wextra", "-Werror"};
  if (language == "objective-c++")
    for (const char* f : {"-fobjc-arc", "-fobjc-runtime=macosx-13.0"}) argv.push_back(f);
  argv.insert(argv.end(), extra.begin(), extra.end());
  for (const std::string& f :
       {"-I" + kStub.string(), "@" + std::string(RLX_METAL_HOST_FLAGS), file.string()})
    argv.push_back(f);
  Parse p;
  p.rc = sdk::run_command(argv, &p.log, 300);
  return p;
}

#define NEED_CLANG(cc)                                                         \
  const std::string cc = clang();                                              \
  if (cc.empty())                                                              \
  GTEST_SKIP() << "no clang++ on PATH (or $RLX_CLANG): the Metal host is not " \
                  "parsed; install clang to check it"

TEST(MetalHost, ParsesAsObjectiveCppWithArcAgainstTheMetalApi) {
  NEED_CLANG(cc);
  const Parse p = parse(cc, kSrc / "metal_host.mm", "objective-c++");
  EXPECT_EQ(p.rc, 0) << p.log;
}

// The target's Apple branch: can_execute, describe_device and open_device_api over metal_host.h.
TEST(MetalHost, TargetParsesWithTheHost) {
  NEED_CLANG(cc);
  const Parse p = parse(cc, kSrc / "metal_target.cpp", "c++", {"-DRLX_METAL_HOST=1"});
  EXPECT_EQ(p.rc, 0) << p.log;
}

// Control: the same parse rejects the host with a call the declarations lack, an undeclared
// constant and a Metal object cast to a C pointer without a bridge, each with its own error.
TEST(MetalHost, ParseRejectsUndeclaredApiAndUnbridgedCasts) {
  NEED_CLANG(cc);
  test::TempDir dir;
  const fs::path bad = dir.path() / "bad_host.mm";
  std::ofstream(bad) << "#include \"" << (kSrc / "metal_host.mm").string() << "\"\n"
                     << "void rlx_bad(id<MTLDevice> d) {\n"
                     << "  [d newUndocumentedQueue];\n"
                     << "  (void)MTLResourceStorageModeUndocumented;\n"
                     << "  void* p = (void*)d;\n"
                     << "  (void)p;\n"
                     << "}\n";
  const Parse p = parse(cc, bad, "objective-c++");
  EXPECT_NE(p.rc, 0) << p.log;
  for (const char* want : {"newUndocumentedQueue", "MTLResourceStorageModeUndocumented", "bridge"})
    EXPECT_NE(p.log.find(want), std::string::npos) << want << "\n" << p.log;
}

// Control: the host refuses to build without ARC (its memory management assumes it).
TEST(MetalHost, RefusesToBuildWithoutArc) {
  NEED_CLANG(cc);
  const Parse p = parse(cc, kSrc / "metal_host.mm", "objective-c++", {"-fno-objc-arc"});
  EXPECT_NE(p.rc, 0) << p.log;
  EXPECT_NE(p.log.find("compile it with -fobjc-arc"), std::string::npos) << p.log;
}

// On a Mac with a Metal device, the registry's metal target on it against the cpu target (the
// tests below skip elsewhere, saying why metal cannot run).
std::shared_ptr<Target> metal_device() {
  std::shared_ptr<Target> metal = test::target_named("metal");
  return metal->can_execute().ok ? metal : nullptr;
}

#define NEED_DEVICE(metal)                              \
  const std::shared_ptr<Target> metal = metal_device(); \
  if (!metal)                                           \
  GTEST_SKIP() << "metal cannot run here: " << test::target_named("metal")->can_execute().reason

// The stand-in's checks (metal_checks.h), on the device.
TEST(MetalHost, RunsTheMixedProgramOnTheDevice) {
  NEED_DEVICE(metal);
  metal::test::expect_mixed_program_like_cpu(metal, 1e-5);
}

TEST(MetalHost, RunsTiledProductsOnTheDevice) {
  NEED_DEVICE(metal);
  metal::test::expect_product_epilogues_like_cpu(metal);
}

// The status buffer is zeroed by a blit fill and read back by the executor through download().
TEST(MetalHost, ReportsABadGatherIndexFromTheDevice) {
  NEED_DEVICE(metal);
  metal::test::expect_bad_gather_reported(metal);
}

}  // namespace
}  // namespace rlx
