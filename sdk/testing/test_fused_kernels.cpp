// Kernels the GPU-style targets fuse against the cpu's unfused ones: norms and elementwise
// kernels computed by the single-row products that read them, a KV cache's new rows by its
// scatters, rotated queries by a decode attention, and attentions that read split heads and
// store merged ones themselves. Registered into every executing target's suite (with their
// programs in suite_programs.cpp); a target that fuses nothing runs them all the same.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "rlx/core/half.h"
#include "target_suite.h"
#include "test_support.h"

namespace rlx::test {
namespace {

// kNormProductProgram: where the products normalise A themselves (the SDK's GEMV), each sums
// the row as the norm kernel would, so the values are the norm's; all agree with cpu (the f16
// product within its rounding).
void norm_products_agree_with_cpu(const SuiteTarget& t) {
  std::mt19937 rng(29);
  auto random = [&](std::vector<int64_t> shape, float scale) {
    return uniform_f32(rng, std::move(shape), scale);
  };
  NamedTensors in{{"x", random({1, 1, 200}, 2.0f)},
                  {"g", random({200}, 1.0f)},
                  {"b", random({200}, 1.0f)},
                  {"w2", random({40, 200}, 0.1f)}};
  const std::vector<double> w = values(random({72, 200}, 0.1f));
  Tensor w16(DType::kF16, {72, 200});
  for (size_t i = 0; i < w.size(); ++i)
    static_cast<uint16_t*>(w16.data())[i] = f32_to_f16(static_cast<float>(w[i]));
  in["w"] = w16;
  NamedTensors want = run_text(kNormProductProgram, in, cpu_target());
  NamedTensors got = run_text(kNormProductProgram, in, target_named(t.name));
  expect_all_close({{"yf", want.at("yf")}}, {{"yf", got.at("yf")}}, 4e-3);
  want.erase("yf");
  got.erase("yf");
  expect_all_close(want, got, 1e-5);
}

// kComputedOperandProgram: the products that compute their A agree with cpu (the f16 product
// within its rounding).
void computed_operands_agree_with_cpu(const SuiteTarget& t) {
  std::mt19937 rng(31);
  NamedTensors in{{"r", uniform_f32(rng, {1, 1, 48}, 1.0f)},
                  {"x2", uniform_f32(rng, {2, 1, 64}, 1.0f)},
                  {"w2", uniform_f32(rng, {2, 24, 64}, 0.2f)}};
  for (const auto& [name, shape] :
       {std::pair<const char*, std::vector<int64_t>>{"h", {1, 1, 160}}, {"w", {48, 80}}}) {
    const std::vector<double> v = values(uniform_f32(rng, shape, name[0] == 'h' ? 3.0f : 0.2f));
    Tensor half(DType::kF16, shape);
    for (size_t i = 0; i < v.size(); ++i)
      static_cast<uint16_t*>(half.data())[i] = f32_to_f16(static_cast<float>(v[i]));
    in[name] = half;
  }
  const NamedTensors want = run_text(kComputedOperandProgram, in, cpu_target());
  const NamedTensors got = run_text(kComputedOperandProgram, in, target_named(t.name));
  expect_all_close({{"o", want.at("o")}}, {{"o", got.at("o")}}, 4e-3);
  expect_all_close({{"z", want.at("z")}}, {{"z", got.at("z")}}, 1e-5);
}

// kScatterUpdatesProgram: caches whose new rows their scatters compute agree with cpu's over
// three positions (the f16 row bit for bit, the rotated f32 row within a rounding).
void scattered_updates_agree_with_cpu(const SuiteTarget& t) {
  std::mt19937 rng(37);
  Tensor past_v(DType::kF16, {1, 2, 8, 16});
  std::memset(past_v.data(), 0, past_v.nbytes());
  NamedTensors in{{"past_k", uniform_f32(rng, {1, 2, 8, 16}, 1.0f)}, {"past_v", past_v}};
  for (int64_t p : {0, 5, 7}) {
    in["position"] = Tensor::from<int64_t>(DType::kI64, {1}, {p});
    in["kv"] = uniform_f32(rng, {1, 1, 64}, 2.0f);
    in["c"] = uniform_f32(rng, {8}, 1.0f);
    in["s"] = uniform_f32(rng, {8}, 1.0f);
    const NamedTensors want = run_text(kScatterUpdatesProgram, in, cpu_target());
    const NamedTensors got = run_text(kScatterUpdatesProgram, in, target_named(t.name));
    expect_all_close({{"pk", want.at("pk")}}, {{"pk", got.at("pk")}}, 1e-6,
                     fmt::format("position {}", p));
    EXPECT_EQ(values(got.at("pv")), values(want.at("pv"))) << "position " << p;
    in["past_k"] = want.at("pk");
    in["past_v"] = want.at("pv");
  }
}

// kComputedQueryProgram: an attention computing its rotated queries itself agrees with cpu.
void computed_queries_agree_with_cpu(const SuiteTarget& t) {
  std::mt19937 rng(41);
  std::vector<uint8_t> keep(10, 1);
  keep[3] = keep[8] = 0;
  NamedTensors in{{"qx", uniform_f32(rng, {1, 1, 64}, 1.0f)},
                  {"c", uniform_f32(rng, {8}, 1.0f)},
                  {"s", uniform_f32(rng, {8}, 1.0f)},
                  {"k", uniform_f32(rng, {1, 2, 10, 16}, 1.0f)},
                  {"v", uniform_f32(rng, {1, 2, 10, 16}, 1.0f)},
                  {"keep", Tensor::from<uint8_t>(DType::kBool, {1, 10}, keep)}};
  expect_all_close(run_text(kComputedQueryProgram, in, cpu_target()),
                   run_text(kComputedQueryProgram, in, target_named(t.name)), 1e-5);
}

// kNormedRotationProgram: a scatter computing the rotated key and the norm before it, and an
// attention computing its rotated queries, agree with cpu, at two positions of the cache.
void normed_rotations_agree_with_cpu(const SuiteTarget& t) {
  std::mt19937 rng(43);
  std::vector<uint8_t> keep(8, 1);
  keep[6] = 0;
  NamedTensors in{{"gq", uniform_f32(rng, {16}, 1.0f)},
                  {"gk", uniform_f32(rng, {16}, 1.0f)},
                  {"c", uniform_f32(rng, {8}, 1.0f)},
                  {"s", uniform_f32(rng, {8}, 1.0f)},
                  {"past_k", uniform_f32(rng, {1, 2, 8, 16}, 1.0f)},
                  {"v", uniform_f32(rng, {1, 2, 8, 16}, 1.0f)},
                  {"keep", Tensor::from<uint8_t>(DType::kBool, {1, 8}, keep)}};
  for (int64_t p : {0, 5}) {
    in["position"] = Tensor::from<int64_t>(DType::kI64, {1}, {p});
    in["qkv"] = uniform_f32(rng, {1, 1, 96}, 3.0f);
    const NamedTensors want = run_text(kNormedRotationProgram, in, cpu_target());
    expect_all_close(want, run_text(kNormedRotationProgram, in, target_named(t.name)), 1e-5,
                     fmt::format("position {}", p));
    in["past_k"] = want.at("pk");
  }
}

// Attentions whose heads a transpose merges back (kMergeHeadsProgram): the tiled and the per-row
// kernel store the merged layout themselves on the GPU-style targets; the results agree with cpu.
void merged_heads_agree_with_cpu(const SuiteTarget& t) {
  std::mt19937 rng(17);
  auto random = [&](std::vector<int64_t> shape) {
    return uniform_f32(rng, std::move(shape), 1.0f);
  };
  NamedTensors in{{"q", random({2, 3, 20, 8})},
                  {"k", random({2, 3, 20, 8})},
                  {"v", random({2, 3, 20, 8})},
                  {"qd", random({2, 3, 2, 8})}};
  expect_all_close(run_text(kMergeHeadsProgram, in, cpu_target()),
                   run_text(kMergeHeadsProgram, in, target_named(t.name)), 1e-5);
}

// Attentions reading q, k and v through the transposes that split heads (kSplitHeadsProgram):
// the GPU-style targets read the unsplit rows themselves; the results agree with cpu.
void split_heads_agree_with_cpu(const SuiteTarget& t) {
  std::mt19937 rng(19);
  auto random = [&](std::vector<int64_t> shape) {
    return uniform_f32(rng, std::move(shape), 1.0f);
  };
  NamedTensors in{{"xq", random({2, 20, 32})}, {"xk", random({2, 20, 16})},
                  {"xv", random({2, 20, 16})}, {"xd", random({2, 2, 32})},
                  {"yk", random({2, 20, 16})}, {"yv", random({2, 20, 16})}};
  expect_all_close(run_text(kSplitHeadsProgram, in, cpu_target()),
                   run_text(kSplitHeadsProgram, in, target_named(t.name)), 1e-5);
}

// Attentions whose q, k and v are column slices of one product's rows (sliced_heads_program(), a
// fused q|k|v projection), in f32 and f16: the GPU-style targets read each slice's heads in place;
// the results agree with cpu (f16 within its rounding).
void sliced_heads_agree_with_cpu(const SuiteTarget& t) {
  std::mt19937 rng(23);
  // Batch 0's first 64 keys are all kept (a whole tile), batch 1 hides one in each tile.
  std::vector<uint8_t> keep(160, 1);
  keep[70] = keep[80 + 30] = keep[80 + 75] = 0;
  const Tensor x = uniform_f32(rng, {2, 80, 64}, 1.0f);
  Tensor h(DType::kF16, {2, 80, 64});
  for (int64_t i = 0; i < x.numel(); ++i)
    static_cast<uint16_t*>(h.data())[i] = f32_to_f16(x.as<float>()[i]);
  NamedTensors in{{"x", x},
                  {"keep", Tensor::from<uint8_t>(DType::kBool, {2, 80}, keep)},
                  {"h", h},
                  {"y", uniform_f32(rng, {2, 80, 64}, 1.0f)}};
  const std::string ir = sliced_heads_program();
  const NamedTensors want = run_text(ir, in, cpu_target());
  const NamedTensors got = run_text(ir, in, target_named(t.name));
  expect_all_close({{"o", want.at("o")}, {"o3", want.at("o3")}},
                   {{"o", got.at("o")}, {"o3", got.at("o3")}}, 1e-5);
  expect_all_close({{"of", want.at("of")}}, {{"of", got.at("of")}}, 4e-3);
}

// Tiled attentions with many query rows, where each query's keys go to fewer invocations: two
// at 32800 rows, one from 65600 (render_attention's key_splits; the suite's small attentions
// deal them to four), under a padding mask that hides some keys.
void many_query_attentions_agree_with_cpu(const SuiteTarget& t) {
  const char* ir =
      R"(graph @t(%q2: f32[1,2,16400,8], %q1: f32[1,4,16400,8], %k2: f32[1,2,20,8], %v2: f32[1,2,20,8], %k1: f32[1,4,20,8], %v1: f32[1,4,20,8], %m: bool[1,20]) {
  %a = Attention(%q2, %k2, %v2, %m) {mask = "padding"} : f32[1,2,16400,8]
  %b = Attention(%q1, %k1, %v1, %m) {mask = "padding"} : f32[1,4,16400,8]
  return %a, %b
}
)";
  std::mt19937 rng(23);
  std::vector<uint8_t> keep(20, 1);
  for (int j : {3, 4, 11, 19}) keep[j] = 0;
  NamedTensors in{{"q2", uniform_f32(rng, {1, 2, 16400, 8}, 1.0f)},
                  {"q1", uniform_f32(rng, {1, 4, 16400, 8}, 1.0f)},
                  {"k2", uniform_f32(rng, {1, 2, 20, 8}, 1.0f)},
                  {"v2", uniform_f32(rng, {1, 2, 20, 8}, 1.0f)},
                  {"k1", uniform_f32(rng, {1, 4, 20, 8}, 1.0f)},
                  {"v1", uniform_f32(rng, {1, 4, 20, 8}, 1.0f)},
                  {"m", Tensor::from<uint8_t>(DType::kBool, {1, 20}, keep)}};
  expect_all_close(run_text(ir, in, cpu_target()), run_text(ir, in, target_named(t.name)), 1e-5);
}

void register_fused_kernel_tests(const SuiteTarget& t) {
  const std::string suite = t.display + "Target";
  auto add = [&](const std::string& name, void (*body)(const SuiteTarget&)) {
    register_function_test(t, suite, name, [t, body] { body(t); });
  };
  add("NormsBeforeSingleRowProductsAgreeWithCpu", norm_products_agree_with_cpu);
  add("ComputedOperandsOfSingleRowProductsAgreeWithCpu", computed_operands_agree_with_cpu);
  add("ScatteredUpdatesComputedByTheScatterAgreeWithCpu", scattered_updates_agree_with_cpu);
  add("ComputedQueriesOfDecodeAttentionsAgreeWithCpu", computed_queries_agree_with_cpu);
  add("NormsComputedWithTheRotationsAfterThemAgreeWithCpu", normed_rotations_agree_with_cpu);
  add("AttentionsStoreMergedHeadsAndAgreeWithCpu", merged_heads_agree_with_cpu);
  add("AttentionsReadSplitHeadsAndAgreeWithCpu", split_heads_agree_with_cpu);
  add("AttentionsReadSlicedHeadsAndAgreeWithCpu", sliced_heads_agree_with_cpu);
  add("AttentionsOfManyQueriesAgreeWithCpu", many_query_attentions_agree_with_cpu);
}

const bool kRegistered = add_suite_extension(&register_fused_kernel_tests);

}  // namespace
}  // namespace rlx::test
