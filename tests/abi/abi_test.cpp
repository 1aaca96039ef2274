// Discovery against deliberately broken plugins: each case folder under RLX_ABI_CASES_DIR holds
// one plugin (or manifest) and the test checks the exact status and message a user would see.
#include "rlx/sdk/abi.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/runtime.h"
#include "rlx/registry/registry.h"

namespace rlx::registry {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

fs::path case_dir(const std::string& name) {
  return fs::path(RLX_ABI_CASES_DIR) / name;
}

std::string host_abi() {
  return fmt::format("{}.{}", RLX_ABI_MAJOR, RLX_ABI_MINOR);
}

// Every test starts from an environment that points nowhere, so plugins installed on the machine
// (~/.local/share, /usr/share) cannot leak into the expectations.
class AbiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    nowhere_ = fs::path(::testing::TempDir()) / "rlx-abi-nowhere";
    setenv("XDG_DATA_HOME", nowhere_.c_str(), 1);
    setenv("XDG_DATA_DIRS", nowhere_.c_str(), 1);
    unsetenv("RLX_PLUGIN_PATH");
    unsetenv("RLX_DISABLE_PLUGINS");
    unsetenv("RLX_PLUGIN_PROBE_TIMEOUT_S");
    // Probe verdicts from another test (or an earlier run) must not answer for this one.
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    scratch_ =
        fs::path(::testing::TempDir()) / fmt::format("rlx-abi-{}-{}", info->name(), getpid());
    fs::remove_all(scratch_);
    fs::create_directories(scratch_);
    setenv("RLX_CACHE_DIR", (scratch_ / "cache").c_str(), 1);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(scratch_);
  }

  // Legality tables are left to the one test about them, so a core bug in op_legality shows up
  // there and not in every loading test.
  static Registry discover(std::vector<fs::path> paths, bool build_legality = false) {
    Options o;
    o.plugin_paths = std::move(paths);
    o.build_legality = build_legality;
    return Registry::discover(o);
  }

  // The one record of a single-plugin case folder.
  static PluginRecord only(const std::string& folder) {
    Registry r = discover({case_dir(folder)});
    EXPECT_TRUE(r.problems().empty()) << r.problems().front().message;
    EXPECT_EQ(r.plugins().size(), 1u);
    if (r.plugins().empty()) return {};
    return r.plugins().front();
  }

  fs::path nowhere_;
  fs::path scratch_;  // this test's own folder; RLX_CACHE_DIR is its cache/
};

TEST_F(AbiTest, GoodTargetIsCodegenOnlyWithItsReason) {
  Registry r = discover({case_dir("good")});
  ASSERT_EQ(r.plugins().size(), 1u);
  const PluginRecord& p = r.plugins()[0];
  EXPECT_EQ(p.name, "abi_good");
  EXPECT_EQ(p.kind, "target");
  EXPECT_EQ(p.status, PluginStatus::kCodegenOnly);
  EXPECT_EQ(status_name(p.status), "codegen-only");
  EXPECT_EQ(p.detail, "no device");
  EXPECT_EQ(p.abi, host_abi());
  EXPECT_EQ(p.version, "0.0.1");
  EXPECT_EQ(p.manifest_path, case_dir("good") / "abi_good.toml");
  ASSERT_TRUE(p.target);
  EXPECT_EQ(p.target->name(), "abi_good");
  EXPECT_EQ(r.target("abi_good"), p.target);
}

TEST_F(AbiTest, LegalityTableCoversEveryOpAndDtype) {
  Registry r = discover({case_dir("good")}, /*build_legality=*/true);
  ASSERT_EQ(r.plugins().size(), 1u);
  const auto& legality = r.plugins()[0].legality;
  ASSERT_TRUE(legality.has_value());
  EXPECT_EQ(legality->entries.size(), OpRegistry::instance().ops().size() * kNumDTypes);
  // The plugin refuses every op natively.
  EXPECT_EQ(legality->counts().native, 0);

  EXPECT_FALSE(discover({case_dir("good")}).plugins()[0].legality.has_value());
}

TEST_F(AbiTest, PluginExceptionComesBackAsPluginError) {
  std::shared_ptr<Target> target = discover({case_dir("good")}).target("abi_good");
  // The registry is gone: the target must keep its library loaded.
  EXPECT_EQ(target->can_execute().reason, "no device");
  EXPECT_FALSE(target->claim_native(NodeSignature{"add", {}, {}, {}}).ok);
  try {
    target->compile(lir::Program{});
    FAIL() << "compile should have thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPlugin);
    EXPECT_STREQ(e.what(), "abi_good plugin: codegen exploded");
  }
  std::vector<Artifact> artifacts = target->emit(lir::Program{}, nowhere_);
  ASSERT_EQ(artifacts.size(), 1u);
  EXPECT_EQ(artifacts[0].path, "kernel.txt");
}

TEST_F(AbiTest, ImporterIsFoundByExtension) {
  Registry r = discover({case_dir("importer")});
  ASSERT_EQ(r.plugins().size(), 1u);
  EXPECT_EQ(r.plugins()[0].status, PluginStatus::kAvailable);
  EXPECT_EQ(r.plugins()[0].version, "0.0.2");
  EXPECT_EQ(r.importer_for("model.onnx"), nullptr);
  std::shared_ptr<Importer> imp = r.importer_for("dir/Model.TST");
  ASSERT_TRUE(imp);
  EXPECT_EQ(imp->name(), "abi_importer");
  EXPECT_EQ(r.importer_for("x.tst.gz"), imp);
  EXPECT_EQ(imp->load("dir/model.tst").graph().name, "model");
  try {
    imp->load("fail.tst");
    FAIL() << "load should have thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPlugin);
    EXPECT_STREQ(e.what(), "abi_importer plugin: cannot parse fail.tst");
  }
  // An importer is not a target.
  EXPECT_THROW(r.target("abi_importer"), Error);
}

TEST_F(AbiTest, ImportOptionsReachTheImporter) {
  Registry r = discover({case_dir("importer")});
  std::shared_ptr<Importer> imp = r.importer_for("m.tst");
  ASSERT_TRUE(imp);
  ImportOptions sizes;
  sizes.dim_values = {{"seq", 8}};
  EXPECT_EQ(imp->load("m.tst", sizes).graph().name, "m:with-options seq=8");
  ImportOptions values;
  values.input_values.emplace("k", Tensor(DType::kI64, {}));
  EXPECT_EQ(imp->load("m.tst", values).graph().name, "m:with-options value:k");
  EXPECT_EQ(imp->load("m.tst", ImportOptions{}).graph().name, "m");
}

// Contract 2.0 typed errors: the kind a plugin raised is the kind the host sees, so the CLI can
// advise by kind; only unclassified failures are the plugin's fault (kPlugin).
TEST_F(AbiTest, ErrorsKeepTheirKindAcrossTheBoundary) {
  Registry r = discover({case_dir("importer"), case_dir("contract")});
  auto kind_of = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::make_pair(e.kind(), std::string(e.what()));
    }
    return std::make_pair(ErrorKind::kInternal, std::string("nothing thrown"));
  };
  std::shared_ptr<Importer> imp = r.importer_for("m.tst");
  EXPECT_EQ(kind_of([&] { imp->load("user.tst"); }),
            std::make_pair(ErrorKind::kUser, std::string("abi_importer plugin: user.tst is not a tst model")));
  EXPECT_EQ(kind_of([&] { imp->load("fail.tst"); }),
            std::make_pair(ErrorKind::kPlugin, std::string("abi_importer plugin: cannot parse fail.tst")));
  std::shared_ptr<Target> t = r.target("abi_contract");
  EXPECT_EQ(kind_of([&] { t->device()->allocate(size_t{2} << 30); }),
            std::make_pair(ErrorKind::kDevice, std::string("abi_contract plugin: abi_contract: out of device memory")));
  ChannelOptions two;
  two.world_size = 2;
  EXPECT_EQ(kind_of([&] { t->open_channel(two); }),
            std::make_pair(ErrorKind::kUnsupported, std::string("abi_contract plugin: abi_contract channels have one rank")));
  EXPECT_EQ(kind_of([&] { t->compile(lir::Program{}); }).first, ErrorKind::kPlugin);
}

TEST_F(AbiTest, AMirLevelTargetRunsOnHostAndDeviceBuffers) {
  std::shared_ptr<Target> t = discover({case_dir("contract")}).target("abi_contract");
  EXPECT_EQ(t->program_level(), ProgramLevel::kMir);
  Session session(t);
  CompiledModel m = session.compile(parse_graph(R"(graph @g(%x: f32[N], %y: f32[N]) {
  %z = Add(%x, %y) : f32[N]
  return %z
}
)"));
  auto f32 = [](std::vector<float> v) { return Tensor::from<float>(DType::kF32, {static_cast<int64_t>(v.size())}, v); };
  auto values = [](const Tensor& t) { return std::vector<float>(t.as<float>(), t.as<float>() + t.numel()); };
  // Host tensors in and out: the runtime binds graph inputs, then outputs, for a MIR program.
  NamedTensors out = m.run({{"x", f32({1, 2, 3})}, {"y", f32({10, 20, 30})}});
  EXPECT_EQ(values(out.at("z")), (std::vector<float>{11, 22, 33}));

  // x on the device, z left there, y from the host; then z fed back as the next x.
  std::shared_ptr<Device> dev = m.device();
  ASSERT_TRUE(dev);
  EXPECT_EQ(dev, t->device());  // one device object for the target's life
  EXPECT_EQ(dev->limits().max_buffers_per_kernel, 8u);
  NamedDeviceTensors din{{"x", DeviceTensor::upload(dev, f32({1, 2, 3}))}};
  NamedDeviceTensors dout{{"z", DeviceTensor()}};
  NamedTensors hin{{"y", f32({0.5f, 0.5f, 0.5f})}}, hout;
  m.run(hin, din, hout, dout);
  EXPECT_TRUE(hout.empty());
  ASSERT_TRUE(dout.at("z").defined());
  EXPECT_EQ(values(dout.at("z").download()), (std::vector<float>{1.5f, 2.5f, 3.5f}));
  din["x"] = dout.at("z");
  NamedDeviceTensors dout2{{"z", DeviceTensor()}};
  m.run(hin, din, hout, dout2);
  EXPECT_EQ(values(dout2.at("z").download()), (std::vector<float>{2, 3, 4}));
  // An output may not reuse an input's buffer: the runtime gives z a new one.
  NamedDeviceTensors alias{{"z", din.at("x")}};
  m.run(hin, din, hout, alias);
  EXPECT_NE(alias.at("z").buffer().handle, din.at("x").buffer().handle);
  EXPECT_EQ(values(alias.at("z").download()), (std::vector<float>{2, 3, 4}));

  fs::path dir = fs::path(::testing::TempDir()) / "rlx-abi-contract-emit";
  fs::create_directories(dir);
  std::vector<Artifact> a = t->emit_mir(m.mir_for({{"N", 3}}), dir);
  ASSERT_EQ(a.size(), 1u);
  std::ifstream ops(dir / a[0].path);
  std::string line;
  std::getline(ops, line);
  EXPECT_EQ(line, "1 add");
}

TEST_F(AbiTest, ChannelsQueuesAndExtensionsCrossTheBoundary) {
  std::shared_ptr<Target> t = discover({case_dir("contract")}).target("abi_contract");
  std::shared_ptr<Device> dev = t->device();
  QueueId q = dev->create_queue();
  EXPECT_NE(q, 0u);
  DeviceTensor in = DeviceTensor::upload(dev, Tensor::from<float>(DType::kF32, {2}, {3, 4}));
  DeviceTensor out(dev, DType::kF32, {2});
  std::unique_ptr<Channel> c = t->open_channel(ChannelOptions{});
  EXPECT_EQ(c->rank(), 0);
  EXPECT_EQ(c->world_size(), 1);
  c->all_reduce(in.buffer(), out.buffer(), DType::kF32, 2, ReduceOp::kSum, q);
  dev->synchronize(dev->record(q));
  Tensor back = out.download();
  EXPECT_EQ(back.as<float>()[0], 3);
  EXPECT_EQ(back.as<float>()[1], 4);
  try {
    c->send(in.buffer(), DType::kF32, 2, 1, q);
    FAIL() << "a 1-rank channel cannot send";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUser);
  }
  const auto* answer = static_cast<const int32_t*>(t->extension("abi.contract.answer", 1));
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(*answer, 42);
  EXPECT_EQ(t->extension("abi.contract.answer", 2), nullptr);
  EXPECT_EQ(t->extension("rlx.cuda.stream", 1), nullptr);
  // A target without a device of its own says so, and has no channel.
  std::shared_ptr<Target> good = discover({case_dir("good")}).target("abi_good");
  EXPECT_EQ(good->device(), nullptr);
  EXPECT_THROW(good->open_channel(ChannelOptions{}), Error);
}

TEST_F(AbiTest, ImporterIsFoundByMagicBytesAndFolderMarker) {
  Registry r = discover({case_dir("importer")});
  fs::path dir = fs::temp_directory_path() / "rlx_abi_importer_detect";
  fs::create_directories(dir / "model");
  std::ofstream(dir / "weights.bin") << "TSTMAGIC and then data";
  std::ofstream(dir / "other.bin") << "NOTMAGIC";
  std::ofstream(dir / "model" / "tst-config.json") << "{}";
  EXPECT_NE(r.importer_for(dir / "weights.bin"), nullptr);  // no known extension, magic matches
  EXPECT_EQ(r.importer_for(dir / "other.bin"), nullptr);
  EXPECT_NE(r.importer_for(dir / "model"), nullptr);       // a folder with the marker file
  EXPECT_EQ(r.importer_for(dir), nullptr);                 // a folder without it
  fs::remove_all(dir);
}

TEST_F(AbiTest, AbiMajorMismatchIsIncompatible) {
  PluginRecord p = only("abi_major");
  EXPECT_EQ(p.status, PluginStatus::kIncompatible);
  EXPECT_EQ(status_name(p.status), "incompatible");
  EXPECT_EQ(p.abi, "1.1");  // a 1.x plugin meeting this 2.x host
  EXPECT_EQ(p.detail, fmt::format("built for ABI 1.1, this rlx has ABI {}: rebuild the plugin "
                                  "against this SDK",
                                  host_abi()));
  EXPECT_FALSE(p.target);
}

TEST_F(AbiTest, NewerAbiMinorIsIncompatible) {
  PluginRecord p = only("abi_minor");
  EXPECT_EQ(p.status, PluginStatus::kIncompatible);
  EXPECT_THAT(p.detail, StartsWith(fmt::format("built for ABI {}.7, this rlx has ABI {}:",
                                               RLX_ABI_MAJOR, host_abi())));
}

TEST_F(AbiTest, OtherToolchainIsIncompatible) {
  PluginRecord p = only("toolchain");
  EXPECT_EQ(p.status, PluginStatus::kIncompatible);
  EXPECT_THAT(p.detail, StartsWith(fmt::format("built with toolchain msvc/msvcrt, this rlx was "
                                               "built with {}:",
                                               RLX_TOOLCHAIN_TAG)));
}

TEST_F(AbiTest, KindDisagreeingWithManifestIsIncompatible) {
  PluginRecord p = only("kind");
  EXPECT_EQ(p.status, PluginStatus::kIncompatible);
  EXPECT_EQ(p.detail, "the library says kind \"importer\" but its manifest says kind \"target\"");
}

TEST_F(AbiTest, MissingEntrySymbolIsBroken) {
  PluginRecord p = only("no_entry");
  EXPECT_EQ(p.status, PluginStatus::kBroken);
  EXPECT_EQ(status_name(p.status), "broken");
  EXPECT_THAT(p.detail, StartsWith("missing entry symbol rlx_plugin_abi"));
}

TEST_F(AbiTest, MissingFactoryIsBroken) {
  PluginRecord p = only("no_factory");
  EXPECT_EQ(p.status, PluginStatus::kBroken);
  EXPECT_EQ(p.detail, "missing factory symbol rlx_plugin_factory");
}

TEST_F(AbiTest, ThrowingFactoryIsBroken) {
  PluginRecord p = only("throws");
  EXPECT_EQ(p.status, PluginStatus::kBroken);
  EXPECT_EQ(p.detail, "the plugin failed to start: boom");
}

TEST_F(AbiTest, UndefinedSymbolIsBrokenWithLoaderMessage) {
  PluginRecord p = only("undefined");
  EXPECT_EQ(p.status, PluginStatus::kBroken);
  EXPECT_THAT(p.detail, StartsWith("cannot load librlx_target_abi_undefined.so: "));
  EXPECT_THAT(p.detail, HasSubstr("undefined symbol: rlx_test_symbol_defined_nowhere"));
}

TEST_F(AbiTest, NameMismatchIsBroken) {
  PluginRecord p = only("name_mismatch");
  EXPECT_EQ(p.status, PluginStatus::kBroken);
  EXPECT_THAT(p.detail, StartsWith("the manifest names the plugin \"abi_claimed\" but the "
                                   "library's plugin is named \"abi_actual\""));
}

TEST_F(AbiTest, MissingLibraryFileIsBroken) {
  PluginRecord p = only("no_library");
  EXPECT_EQ(p.status, PluginStatus::kBroken);
  EXPECT_THAT(p.detail,
              StartsWith("library librlx_target_abi_ghost.so not found (looked for " +
                         (case_dir("no_library") / "librlx_target_abi_ghost.so").string() + ")"));
}

TEST_F(AbiTest, MissingSystemLibraryIsUnavailable) {
  Registry r = discover({case_dir("missing_lib")});
  ASSERT_EQ(r.plugins().size(), 1u);
  const PluginRecord& p = r.plugins()[0];
  EXPECT_EQ(p.status, PluginStatus::kUnavailable);
  EXPECT_EQ(status_name(p.status), "unavailable");
  EXPECT_EQ(p.detail,
            "requires libdefinitely-not-here.so.9, which was not found: install the package that "
            "provides it, or add its folder to LD_LIBRARY_PATH");
  try {
    r.target("abi_needs_lib");
    FAIL() << "an unavailable target must not be returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUser);
    EXPECT_THAT(e.what(), StartsWith("target 'abi_needs_lib' is unavailable: requires "
                                     "libdefinitely-not-here.so.9, which was not found"));
  }
}

TEST_F(AbiTest, WrongPlatformIsUnavailable) {
  PluginRecord p = only("wrong_platform");
  EXPECT_EQ(p.status, PluginStatus::kUnavailable);
  EXPECT_THAT(p.detail, StartsWith("built for plan9-mips, this machine is linux-"));
}

TEST_F(AbiTest, MalformedManifestsAreProblemsAndListingContinues) {
  Registry r = discover({case_dir("malformed"), case_dir("good")});
  ASSERT_EQ(r.problems().size(), 2u);
  // Sorted by file name: bad_kind.toml before broken_syntax.toml.
  EXPECT_EQ(r.problems()[0].path, case_dir("malformed") / "bad_kind.toml");
  EXPECT_EQ(r.problems()[0].message, "[plugin] kind must be \"target\" or \"importer\", got \"x\"");
  EXPECT_EQ(r.problems()[1].path, case_dir("malformed") / "broken_syntax.toml");
  EXPECT_THAT(r.problems()[1].message, StartsWith("TOML syntax error at 3:"));
  ASSERT_EQ(r.plugins().size(), 1u);
  EXPECT_EQ(r.plugins()[0].name, "abi_good");
}

TEST_F(AbiTest, ReadManifestNamesFileAndKey) {
  fs::path bad = case_dir("malformed") / "bad_kind.toml";
  try {
    read_manifest(bad);
    FAIL() << "read_manifest should have thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUser);
    EXPECT_EQ(std::string(e.what()),
              bad.string() + ": [plugin] kind must be \"target\" or \"importer\", got \"x\"");
  }
  Manifest m = read_manifest(case_dir("missing_lib") / "abi_needs_lib.toml");
  EXPECT_EQ(m.name, "abi_needs_lib");
  EXPECT_EQ(m.requires_libraries, std::vector<std::string>{"libdefinitely-not-here.so.9"});
  Manifest imp = read_manifest(case_dir("importer") / "abi_importer.toml");
  EXPECT_EQ(imp.extensions, (std::vector<std::string>{".tst", ".tst.gz"}));
}

TEST_F(AbiTest, DuplicateNameIsShadowedByTheFirst) {
  Registry r = discover({case_dir("dup_a"), case_dir("dup_b")});
  ASSERT_EQ(r.plugins().size(), 2u);
  EXPECT_EQ(r.plugins()[0].status, PluginStatus::kCodegenOnly);
  EXPECT_EQ(r.plugins()[0].manifest_path, case_dir("dup_a") / "abi_dup.toml");
  EXPECT_EQ(r.plugins()[1].status, PluginStatus::kShadowed);
  EXPECT_EQ(status_name(r.plugins()[1].status), "shadowed");
  EXPECT_EQ(r.plugins()[1].detail, "shadowed by " + (case_dir("dup_a") / "abi_dup.toml").string());
  EXPECT_EQ(r.target("abi_dup"), r.plugins()[0].target);
}

TEST_F(AbiTest, PluginPathTakesPrecedenceOverEnvironment) {
  setenv("RLX_PLUGIN_PATH", case_dir("dup_b").c_str(), 1);
  Registry r = discover({case_dir("dup_a")});
  ASSERT_GE(r.search_dirs().size(), 2u);
  EXPECT_EQ(r.search_dirs()[0].path, case_dir("dup_a"));
  EXPECT_EQ(r.search_dirs()[0].origin, "--plugin-path");
  EXPECT_EQ(r.search_dirs()[1].path, case_dir("dup_b"));
  EXPECT_EQ(r.search_dirs()[1].origin, "RLX_PLUGIN_PATH");
  ASSERT_EQ(r.plugins().size(), 2u);
  EXPECT_EQ(r.plugins()[0].manifest_path, case_dir("dup_a") / "abi_dup.toml");
  EXPECT_EQ(r.plugins()[1].status, PluginStatus::kShadowed);
}

TEST_F(AbiTest, PluginPathEnvironmentIsSearchedInOrder) {
  std::string both = case_dir("dup_b").string() + "::" + case_dir("dup_a").string();
  setenv("RLX_PLUGIN_PATH", both.c_str(), 1);
  Registry r = discover({});
  ASSERT_EQ(r.plugins().size(), 2u);
  EXPECT_EQ(r.plugins()[0].manifest_path, case_dir("dup_b") / "abi_dup.toml");
  EXPECT_EQ(r.plugins()[1].detail, "shadowed by " + (case_dir("dup_b") / "abi_dup.toml").string());
}

TEST_F(AbiTest, SameFolderTwiceIsSearchedOnce) {
  setenv("RLX_PLUGIN_PATH", case_dir("good").c_str(), 1);
  Registry r = discover({case_dir("good"), case_dir("good") / ".", case_dir("no_such_case")});
  ASSERT_EQ(r.plugins().size(), 1u);
  EXPECT_EQ(r.plugins()[0].status, PluginStatus::kCodegenOnly);
  ASSERT_EQ(r.search_dirs().size(), 1u);
  // The missing folder named on the command line is reported, not fatal.
  ASSERT_EQ(r.problems().size(), 1u);
  EXPECT_EQ(r.problems()[0].path, case_dir("no_such_case"));
}

TEST_F(AbiTest, SearchOrderCoversUserPrefixAndSystemFolders) {
  fs::path root = fs::path(::testing::TempDir()) / "rlx-abi-search";
  fs::remove_all(root);
  fs::path user = root / "home/rlx/plugins.d";
  fs::path sys1 = root / "sys1/rlx/plugins.d";
  fs::path sys2 = root / "sys2/rlx/plugins.d";
  for (const fs::path& p : {user, sys1, sys2}) fs::create_directories(p);
  setenv("XDG_DATA_HOME", (root / "home").c_str(), 1);
  std::string dirs =
      (root / "sys1").string() + ":" + (root / "missing").string() + ":" + (root / "sys2").string();
  setenv("XDG_DATA_DIRS", dirs.c_str(), 1);
  setenv("RLX_PLUGIN_PATH", case_dir("dup_b").c_str(), 1);

  std::vector<SearchDir> d = plugin_search_dirs(Options{{case_dir("dup_a")}, true});
  std::vector<std::pair<fs::path, std::string>> got;
  for (const SearchDir& s : d)
    if (s.origin != "install prefix") got.emplace_back(s.path, s.origin);
  std::vector<std::pair<fs::path, std::string>> want = {
      {case_dir("dup_a"), "--plugin-path"},
      {case_dir("dup_b"), "RLX_PLUGIN_PATH"},
      {user, "user"},
      {sys1, "system"},
      {sys2, "system"},
  };
  EXPECT_EQ(got, want);

  // Without XDG_DATA_HOME the user folder is ~/.local/share/rlx/plugins.d.
  unsetenv("XDG_DATA_HOME");
  unsetenv("RLX_PLUGIN_PATH");
  fs::create_directories(root / "h/.local/share/rlx/plugins.d");
  const char* home = std::getenv("HOME");
  std::string saved_home = home ? home : "";
  setenv("HOME", (root / "h").c_str(), 1);
  d = plugin_search_dirs(Options{});
  if (home) setenv("HOME", saved_home.c_str(), 1);
  ASSERT_GE(d.size(), 1u);
  EXPECT_EQ(d[0].path, root / "h/.local/share/rlx/plugins.d");
  EXPECT_EQ(d[0].origin, "user");
  fs::remove_all(root);
}

TEST_F(AbiTest, InstallPrefixFolderIsNextToTheBinary) {
  fs::path exe = fs::read_symlink("/proc/self/exe");
  fs::path dir = exe.parent_path().parent_path() / "share/rlx/plugins.d";
  bool existed = fs::exists(dir);
  fs::create_directories(dir);
  std::vector<SearchDir> d = plugin_search_dirs(Options{});
  bool found = false;
  for (const SearchDir& s : d) found |= s.origin == "install prefix" && s.path == dir;
  if (!existed) fs::remove_all(exe.parent_path().parent_path() / "share");
  EXPECT_TRUE(found) << dir;
}

TEST_F(AbiTest, DisablePluginsLoadsNothingAndSaysWhy) {
  setenv("RLX_DISABLE_PLUGINS", "1", 1);
  Registry r = discover({case_dir("good")});
  EXPECT_TRUE(r.plugins().empty());
  EXPECT_TRUE(r.search_dirs().empty());
  ASSERT_EQ(r.problems().size(), 1u);
  EXPECT_THAT(r.problems()[0].message, HasSubstr("RLX_DISABLE_PLUGINS=1"));
  try {
    r.target("abi_good");
    FAIL() << "no target may be found with plugins disabled";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), StartsWith("unknown target 'abi_good'; available targets: none"));
    EXPECT_THAT(e.what(), HasSubstr("RLX_DISABLE_PLUGINS"));
  }

  for (const char* off : {"0", ""}) {
    setenv("RLX_DISABLE_PLUGINS", off, 1);
    EXPECT_EQ(discover({case_dir("good")}).plugins().size(), 1u) << "RLX_DISABLE_PLUGINS=" << off;
  }
}

TEST_F(AbiTest, UnknownTargetListsTheUsableOnes) {
  Registry r = discover({case_dir("good"), case_dir("abi_major")});
  try {
    r.target("nope");
    FAIL() << "unknown target";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUser);
    EXPECT_THAT(e.what(),
                StartsWith("unknown target 'nope'; available targets: abi_good (codegen-only)"));
  }
  try {
    r.target("abi_major");
    FAIL() << "incompatible target";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), StartsWith("target 'abi_major' is incompatible: built for ABI 1.1"));
  }
}

// Whether the process has `library` mapped (RTLD_NOLOAD maps nothing; it only answers).
bool is_mapped(const fs::path& library) {
  void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != nullptr;
}

// A command that names one target or reads one model must not start every other plugin (a
// driver's start-up can cost 100 ms); the full list still loads them all.
TEST_F(AbiTest, LibrariesLoadOnlyWhenAsked) {
  Registry r = discover({case_dir("good"), case_dir("importer"), case_dir("lazy")});
  const fs::path lazy = case_dir("lazy") / "librlx_target_abi_lazy.so";
  ASSERT_TRUE(fs::exists(lazy));
  ASSERT_FALSE(is_mapped(lazy)) << "another test loaded the lazy case first";
  ASSERT_NE(r.target("abi_good"), nullptr);
  ASSERT_NE(r.importer_for("m.tst"), nullptr);
  EXPECT_EQ(r.importer_for("m.onnx"), nullptr);
  EXPECT_FALSE(is_mapped(lazy));
  ASSERT_EQ(r.plugins().size(), 3u);  // the whole list: everything is loaded and has its status
  EXPECT_TRUE(is_mapped(lazy));
  EXPECT_EQ(r.plugins()[2].name, "abi_lazy");
  EXPECT_EQ(r.plugins()[2].status, PluginStatus::kCodegenOnly);
  EXPECT_EQ(r.plugins()[2].detail, "no device");
}

// Lookups from several threads on a registry nothing has loaded yet: each plugin loads once and
// every thread gets the same object.
TEST_F(AbiTest, ConcurrentLookupsLoadEachPluginOnce) {
  Registry r = discover({case_dir("good"), case_dir("importer")});
  std::vector<std::shared_ptr<Target>> targets(8);
  std::vector<std::shared_ptr<Importer>> importers(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < targets.size(); ++i)
    threads.emplace_back([&, i] {
      targets[i] = r.target("abi_good");
      importers[i] = r.importer_for("m.tst");
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < targets.size(); ++i) {
    ASSERT_NE(targets[i], nullptr);
    EXPECT_EQ(targets[i], targets[0]);
    ASSERT_NE(importers[i], nullptr);
    EXPECT_EQ(importers[i], importers[0]);
  }
  EXPECT_EQ(r.plugins()[0].target, targets[0]);
}

// --- Where a manifest may point ---

std::string manifest_of(const std::string& folder, const std::string& name) {
  return (case_dir(folder) / (name + ".toml")).string();
}

TEST_F(AbiTest, LibraryOutsideTheManifestsFolderIsBroken) {
  const fs::path good = case_dir("good") / "librlx_target_abi_good.so";
  const std::map<std::string, std::string> how = {
      {"library_absolute", "\"" + good.string() + "\" is an absolute path"},
      {"library_dotdot", "\"../good/librlx_target_abi_good.so\" leads out of it"},
      {"library_symlink", "\"librlx_target_abi_good.so\" resolves to " +
                              fs::canonical(good).string() + ", outside it"},
  };
  for (const auto& [folder, what] : how) {
    SCOPED_TRACE(folder);
    PluginRecord p = only(folder);
    EXPECT_EQ(p.status, PluginStatus::kBroken);
    EXPECT_EQ(p.detail,
              fmt::format("{}: [plugin] library {}; it must name a file in the "
                          "manifest's folder ({}): put the library beside the manifest "
                          "and name it by its file name",
                          manifest_of(folder, "abi_good"), what, case_dir(folder).string()));
    EXPECT_FALSE(p.target);
  }
}

TEST_F(AbiTest, RequiredLibrariesAreNamesNotPaths) {
  Registry r = discover({case_dir("requires_path")});
  EXPECT_TRUE(r.plugins().empty());
  ASSERT_EQ(r.problems().size(), 1u);
  EXPECT_EQ(r.problems()[0].message,
            "[requires] libraries entries must be library names the system loader finds "
            "(\"libcuda.so.1\"), not paths, got \"/tmp/evil.so\"");
}

// --- The probe: libraries that attack the process loading them (issue 24's recipes) ---

// Each is broken with what happened in the probe's child process and where, and none of them was
// ever mapped into this process: the probe kept them out.
TEST_F(AbiTest, HostileLibrariesAreBrokenWithWhatHappened) {
  setenv("RLX_PLUGIN_PROBE_TIMEOUT_S", "1", 1);
  Registry r = discover({case_dir("hostile")});
  EXPECT_TRUE(r.problems().empty()) << r.problems().front().message;
  const std::string fix = ": remove or fix the plugin (";
  const std::map<std::string, std::string> want = {
      {"hostile_ctor_segv", "crashed with SIGSEGV while loading the library" + fix +
                                manifest_of("hostile", "hostile_ctor_segv") + ")"},
      {"hostile_ctor_abort", "crashed with SIGABRT while loading the library" + fix},
      {"hostile_ctor_loop", "did not answer within 1 s while loading the library" + fix},
      {"hostile_ctor_exit", "ended the process (exit status 0) while loading the library" + fix},
      {"hostile_abi_data",
       "rlx_plugin_abi is not a function (the library exports data under "
       "that name)"},
      {"hostile_abi_pointer",
       "crashed with SIGSEGV during the ABI handshake (rlx_plugin_abi)" + fix},
      {"hostile_factory_segv", "crashed with SIGSEGV in its factory (rlx_plugin_factory)" + fix},
      {"hostile_factory_scribble", "crashed with SIGSEGV while asked its name and version" + fix},
  };
  ASSERT_EQ(r.plugins().size(), want.size());
  for (const PluginRecord& p : r.plugins()) {
    SCOPED_TRACE(p.name);
    ASSERT_TRUE(want.count(p.name));
    EXPECT_EQ(p.status, PluginStatus::kBroken);
    EXPECT_THAT(p.detail, StartsWith(want.at(p.name)));
    EXPECT_FALSE(p.target);
    EXPECT_FALSE(is_mapped(p.library_path));
  }
  EXPECT_THAT(r.plugins()[0].detail, Not(HasSubstr("remembered")));
  try {
    r.target("hostile_ctor_segv");
    FAIL() << "a broken target must not be returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUser);
    EXPECT_THAT(e.what(), StartsWith("target 'hostile_ctor_segv' is broken: crashed with SIGSEGV"));
  }
}

// An importer claiming a file is passed over when its probe fails, and can be asked about.
TEST_F(AbiTest, UnusableImporterIsPassedOverAndNamed) {
  Registry r = discover({case_dir("hostile_importer"), case_dir("importer")});
  EXPECT_EQ(r.importer_for("model.onnx"), nullptr);
  std::vector<PluginRecord> unusable = r.unusable_importers_for("model.onnx");
  ASSERT_EQ(unusable.size(), 1u);
  EXPECT_EQ(unusable[0].name, "hostile_importer");
  EXPECT_EQ(unusable[0].status, PluginStatus::kBroken);
  EXPECT_THAT(unusable[0].detail, StartsWith("crashed with SIGSEGV while loading the library"));
  EXPECT_TRUE(r.unusable_importers_for("model.tst").empty());
  ASSERT_NE(r.importer_for("model.tst"), nullptr);
  EXPECT_FALSE(is_mapped(unusable[0].library_path));
}

// A copy of one case's manifest and library in a folder of the test's own.
fs::path copy_case(const std::string& folder, const std::string& name, const fs::path& to) {
  fs::create_directories(to);
  for (const fs::directory_entry& e : fs::directory_iterator(case_dir(folder))) {
    const std::string file = e.path().filename().string();
    if (file == name + ".toml" || file.find("_" + name + ".so") != std::string::npos)
      fs::copy_file(e.path(), to / file, fs::copy_options::overwrite_existing);
  }
  return to;
}

// Changes one byte of `file` that loading never reads (the compiler's note in .comment), keeping
// its size and modification time: only the content hash can tell.
void change_unread_byte(const fs::path& file) {
  const fs::file_time_type time = fs::last_write_time(file);
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = bytes.find("GCC: (");
  ASSERT_NE(at, std::string::npos);
  bytes[at] = 'g';
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  fs::last_write_time(file, time);
}

TEST_F(AbiTest, CrashVerdictsAreRememberedUntilTheFileChanges) {
  const fs::path dir = copy_case("hostile", "hostile_ctor_segv", scratch_ / "plugins");
  auto detail = [&] { return discover({dir}).plugins().at(0).detail; };
  EXPECT_THAT(detail(), Not(HasSubstr("remembered")));
  const std::string again = detail();
  EXPECT_THAT(again, StartsWith("crashed with SIGSEGV while loading the library"));
  EXPECT_THAT(again, HasSubstr("[remembered from an earlier check of this file; delete " +
                               (scratch_ / "cache" / "plugin-probe").string()));
  const fs::path lib = dir / "librlx_target_hostile_ctor_segv.so";
  // Same path, size and time, other bytes: probed again.
  change_unread_byte(lib);
  EXPECT_THAT(detail(), Not(HasSubstr("remembered")));
  EXPECT_THAT(detail(), HasSubstr("remembered"));
  // The same bytes touched otherwise (a chmod): still remembered, hashed once more.
  fs::permissions(lib, fs::perms::others_read, fs::perm_options::remove);
  EXPECT_THAT(detail(), HasSubstr("remembered"));
  // A newer time alone is enough to probe again.
  fs::last_write_time(lib, fs::last_write_time(lib) + std::chrono::seconds(5));
  EXPECT_THAT(detail(), Not(HasSubstr("remembered")));
}

TEST_F(AbiTest, PassesAreRememberedAndTimeoutsAreNot) {
  Registry good = discover({case_dir("good")});
  EXPECT_EQ(good.plugins().at(0).status, PluginStatus::kCodegenOnly);
  std::vector<fs::path> verdicts;
  for (const auto& e : fs::directory_iterator(scratch_ / "cache" / "plugin-probe"))
    verdicts.push_back(e.path());
  ASSERT_EQ(verdicts.size(), 1u);
  std::ifstream in(verdicts[0]);
  EXPECT_THAT(std::string(std::istreambuf_iterator<char>(in), {}), HasSubstr("passed"));
  // The remembered pass: the plugin still loads, and can_execute() is asked again here.
  EXPECT_EQ(discover({case_dir("good")}).plugins().at(0).detail, "no device");

  // A plugin that hangs costs the time limit at each discovery: a busy moment must not become
  // a verdict kept for good.
  setenv("RLX_PLUGIN_PROBE_TIMEOUT_S", "0.3", 1);
  const fs::path dir = copy_case("hostile", "hostile_ctor_loop", scratch_ / "plugins");
  for (int i = 0; i < 2; ++i) {
    auto start = std::chrono::steady_clock::now();
    std::string detail = discover({dir}).plugins().at(0).detail;
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
    EXPECT_THAT(detail, StartsWith("did not answer within 0.3 s while loading the library"));
    EXPECT_THAT(detail, HasSubstr("or raise RLX_PLUGIN_PROBE_TIMEOUT_S if it is only slow"));
    EXPECT_THAT(detail, Not(HasSubstr("remembered")));
  }
}

TEST_F(AbiTest, UnwritableCacheCostsAProbeNotAFailure) {
  const fs::path file = scratch_ / "not-a-folder";
  std::ofstream(file) << "x";
  setenv("RLX_CACHE_DIR", file.c_str(), 1);
  const fs::path dir = copy_case("hostile", "hostile_ctor_segv", scratch_ / "plugins");
  for (int i = 0; i < 2; ++i) {
    Registry r = discover({dir, case_dir("good")});
    EXPECT_TRUE(r.problems().empty());
    ASSERT_EQ(r.plugins().size(), 2u);
    EXPECT_THAT(r.plugins()[0].detail, StartsWith("crashed with SIGSEGV"));
    EXPECT_THAT(r.plugins()[0].detail, Not(HasSubstr("remembered")));
    EXPECT_EQ(r.plugins()[1].status, PluginStatus::kCodegenOnly);
  }
}

// Without the helper rlx still works, loading plugins unchecked, and the listing says so.
TEST_F(AbiTest, MissingProbeHelperIsListedAndPluginsStillLoad) {
  Options o;
  o.plugin_paths = {case_dir("good")};
  o.build_legality = false;
  o.probe_helper = scratch_ / "no-such-rlx-plugin-probe";
  Registry r = Registry::discover(o);
  ASSERT_EQ(r.problems().size(), 1u);
  EXPECT_EQ(r.problems()[0].path, *o.probe_helper);
  EXPECT_THAT(r.problems()[0].message,
              StartsWith("the plugin probe (rlx-plugin-probe) is missing here, so plugins are "
                         "loaded into rlx unchecked"));
  EXPECT_THAT(r.problems()[0].message, HasSubstr("reinstall rlx"));
  EXPECT_EQ(r.plugins().at(0).status, PluginStatus::kCodegenOnly);
}

// A helper that fails by itself (here it is /bin/false) blames neither the plugin nor the cache.
TEST_F(AbiTest, FailingProbeHelperBlamesRlxAndIsNotRemembered) {
  Options o;
  o.plugin_paths = {case_dir("good")};
  o.build_legality = false;
  o.probe_helper = "/bin/false";
  for (int i = 0; i < 2; ++i) {
    Registry r = Registry::discover(o);
    EXPECT_TRUE(r.problems().empty());
    EXPECT_EQ(r.plugins().at(0).status, PluginStatus::kBroken);
    EXPECT_EQ(r.plugins().at(0).detail,
              "could not be checked before loading: the plugin probe /bin/false ended the process "
              "(exit status 1) before it reached the plugin: reinstall rlx");
  }
}

TEST_F(AbiTest, ProbeTimeoutMustBeSeconds) {
  for (const char* bad : {"abc", "0", "-1", "5s", "nan"}) {
    setenv("RLX_PLUGIN_PROBE_TIMEOUT_S", bad, 1);
    Registry r = discover({case_dir("good")});
    ASSERT_EQ(r.problems().size(), 1u) << bad;
    EXPECT_EQ(r.problems()[0].message,
              fmt::format("RLX_PLUGIN_PROBE_TIMEOUT_S=\"{}\" is not a number of seconds above 0; "
                          "plugins get the default 5 s to answer the probe",
                          bad));
    EXPECT_EQ(r.plugins().at(0).status, PluginStatus::kCodegenOnly);
  }
}

}  // namespace
}  // namespace rlx::registry
