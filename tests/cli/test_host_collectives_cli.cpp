// `--allow-host-collectives` (docs/parallel.md, "Host-staged collectives"): on vulkan, which has
// no collective engine, collectives run through the host only when the user allows it: each
// copies its operand to the host, runs on the cpu target's Gloo channel and copies back. Without
// the flag the graph's collective is a CompileError naming the node and the flag. Run on lavapipe
// (Mesa's software Vulkan); skipped where vulkan cannot run.
#include <cmath>

#include "cli_fixture.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

const fs::path kFixtures = RLX_FIXTURES_DIR;

class HostCollectivesCli : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ProcessResult r = rlx({"--list-targets", "--json"}, device_env());
    ASSERT_EQ(r.exit_code, 0) << dump(r);
    const json::Value doc = parse_json(r);
    const json::Value* vulkan = find_named(*doc.find("targets"), "vulkan");
    if (!vulkan || str(vulkan->find("status")) != "available")
      GTEST_SKIP() << "vulkan is not available here: "
                   << (vulkan ? str(vulkan->find("detail")) : "its plugin is not built");
  }

  // Vulkan finds its drivers (lavapipe's ICD file) through the system's data folders.
  static test::Environment device_env() {
    return {{"XDG_DATA_DIRS", "/usr/local/share:/usr/share"}};
  }

  // Every staged collective on 2 ranks, each rank's x the same: the values are checked against
  // the cpu target's own (Gloo, natively) below.
  fs::path collectives_graph() {
    return write("coll.rlx",
                 "graph @coll(%x: f32[4]) {\n"
                 "  %sum = AllReduce(%x) {reduce = \"sum\"} : f32[4]\n"
                 "  %mean = AllReduce(%x) {reduce = \"mean\"} : f32[4]\n"
                 "  %max = AllReduce(%x) {reduce = \"max\"} : f32[4]\n"
                 "  %all = AllGather(%x) {world = 2} : f32[8]\n"
                 "  %part = ReduceScatter(%x) {reduce = \"sum\", world = 2} : f32[2]\n"
                 "  %root = Broadcast(%x) {root = 1} : f32[4]\n"
                 "  return %sum, %mean, %max, %all, %part, %root\n}\n");
  }

  // The --json outputs' values, in order.
  static std::vector<std::vector<double>> output_values(const ProcessResult& r) {
    std::vector<std::vector<double>> values;
    const json::Value doc = parse_json(r);
    const json::Value* outputs = doc.find("outputs");
    if (!outputs || !outputs->as_array()) return values;
    for (const json::Value& o : *outputs->as_array()) {
      values.emplace_back();
      for (const json::Value& x : *o.find("values")->as_array())
        values.back().push_back(x.as_number()->value);
    }
    return values;
  }
};

TEST_F(HostCollectivesCli, StagedCollectivesGiveTheCpuTargetsValues) {
  const std::vector<std::string> args = {
      "run",    collectives_graph().string(), "--input", "x=1,-2,3.5,4", "--nproc", "2",
      "--json", "--collective-timeout",       "30"};
  std::vector<std::string> cpu_args = args, vk_args = args;
  cpu_args.insert(cpu_args.end(), {"--target", "cpu"});
  vk_args.insert(vk_args.end(), {"--target", "vulkan", "--allow-host-collectives"});
  ProcessResult cpu = rlx(cpu_args);
  ASSERT_EQ(cpu.exit_code, 0) << dump(cpu);
  ProcessResult vk = rlx(vk_args, device_env());
  ASSERT_EQ(vk.exit_code, 0) << dump(vk);
  const std::vector<std::vector<double>> want = output_values(cpu), got = output_values(vk);
  ASSERT_EQ(want.size(), 6u) << dump(cpu);
  EXPECT_EQ(got, want) << dump(vk);
  EXPECT_EQ(want[0], (std::vector<double>{2, -4, 7, 8})) << dump(cpu);  // the sum, by hand
}

// minilm-l2-f16 split over two ranks (--tp 2), its AllReduces staged through the host, embeds
// the reference sentences as transformers does in float64, as one vulkan process does.
TEST_F(HostCollectivesCli, TensorParallelRanksOnVulkanEmbedAsOneProcessDoes) {
  const fs::path dir = kFixtures / "minilm-l2-f16";
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  const fs::path inputs = dir_ / "inputs.safetensors";
  write_safetensors(inputs, {{"input_ids", ref.at("input_ids")},
                             {"attention_mask", ref.at("attention_mask")},
                             {"token_type_ids", ref.at("token_type_ids")}});
  auto embed = [&](const std::vector<std::string>& more, const std::string& file) {
    std::vector<std::string> args = {"run",
                                     dir.string(),
                                     "--inputs",
                                     inputs.string(),
                                     "--target",
                                     "vulkan",
                                     "-o",
                                     (dir_ / file).string(),
                                     "--collective-timeout",
                                     "60"};
    args.insert(args.end(), more.begin(), more.end());
    ProcessResult r = rlx(args, device_env());
    EXPECT_EQ(r.exit_code, 0) << dump(r);
    return r.exit_code == 0 ? read_safetensors(dir_ / file).at("sentence_embedding") : Tensor();
  };
  const Tensor one = embed({}, "one.safetensors");
  const Tensor two =
      embed({"--tp", "2", "--nproc", "2", "--allow-host-collectives"}, "two.safetensors");
  ASSERT_TRUE(one.defined() && two.defined());
  ASSERT_EQ(one.shape(), two.shape());
  const Tensor& want = ref.at("sentence_embedding_f64");
  const int64_t rows = two.shape()[0], width = two.shape()[1];
  for (int64_t i = 0; i < rows; ++i) {
    double dot = 0, a = 0, b = 0;
    for (int64_t j = 0; j < width; ++j) {
      const double x = two.as<float>()[i * width + j], y = want.as<double>()[i * width + j];
      dot += x * y, a += x * x, b += y * y;
      // One process's, to float rounding: the split sums add the same products in another order.
      EXPECT_NEAR(x, one.as<float>()[i * width + j], 1e-4) << "sentence " << i << ", dim " << j;
    }
    EXPECT_GE(dot / std::sqrt(a * b), 0.99999) << "sentence " << i;
  }
}

// Never staged silently: without the flag the collective is a CompileError naming the node and
// the flag (rlx explain), and ranks on vulkan are refused before they compile, saying the same.
// With it, rlx explain reports the rewrite.
TEST_F(HostCollectivesCli, StagingIsReportedAndOnlyWhereAllowed) {
  const fs::path g = collectives_graph();
  ProcessResult refused = rlx({"explain", g.string(), "--target", "vulkan"}, device_env());
  EXPECT_EQ(refused.exit_code, 1) << dump(refused);
  EXPECT_THAT(refused.err, HasSubstr("cannot compile node %sum (AllReduce) for target 'vulkan'"))
      << dump(refused);
  EXPECT_THAT(refused.err, HasSubstr("pass --allow-host-collectives")) << dump(refused);

  ProcessResult ranks = rlx({"run", g.string(), "--input", "x=1,2,3,4", "--nproc", "2", "--target",
                             "vulkan", "--collective-timeout", "30"},
                            device_env());
  EXPECT_NE(ranks.exit_code, 0) << dump(ranks);
  EXPECT_THAT(ranks.err, HasSubstr("vulkan has no collective engine")) << dump(ranks);
  EXPECT_THAT(ranks.err, HasSubstr("pass --allow-host-collectives")) << dump(ranks);

  ProcessResult allowed =
      rlx({"explain", g.string(), "--target", "vulkan", "--allow-host-collectives", "--json"},
          device_env());
  ASSERT_EQ(allowed.exit_code, 0) << dump(allowed);
  const json::Value doc = parse_json(allowed);
  const json::Value* entries = doc.find("nodes");
  ASSERT_TRUE(entries && entries->as_array()) << allowed.out;
  ASSERT_EQ(entries->as_array()->size(), 6u) << allowed.out;
  for (const json::Value& e : *entries->as_array()) {
    EXPECT_EQ(str(e.find("path")), "rewritten") << allowed.out;
    EXPECT_EQ(str(e.find("rewrite")), "host-staged-collective") << allowed.out;
  }
  ProcessResult text =
      rlx({"explain", g.string(), "--target", "vulkan", "--allow-host-collectives"}, device_env());
  ASSERT_EQ(text.exit_code, 0) << dump(text);
  EXPECT_THAT(text.out, HasSubstr("rewritten  via host-staged-collective")) << dump(text);
}

}  // namespace
}  // namespace rlx::cli
