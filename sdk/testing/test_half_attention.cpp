// Attention over f16 and bf16 tensors (what `--precision amp-*` gives a transformer) against the
// cpu's: split and merged heads, grouped kv heads, padding and causal masks, query and key counts
// no tile divides, head dimensions 16 to 128. On cuda this is the tensor-core kernel, which rounds
// the probabilities to the 16-bit type before the product with V; the bounds allow that rounding
// (f16 keeps 11 bits, bf16 8) on outputs of size about 1.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "rlx/core/ir_text.h"
#include "target_suite.h"
#include "test_support.h"

namespace rlx::test {
namespace {

// A transformer's attention as models write it: heads split from the projections' rows, the
// output merged back; grouped kv heads (4 query heads, 2 kv heads), D 16, 70 positions, padding.
const char* const kSplitMergeProgram =
    R"(graph @t(%xq: f32[2,70,64], %xk: f32[2,70,32], %xv: f32[2,70,32], %m: i64[2,70]) {
  %hq = convert(%xq) {dtype = DT} : DT[2,70,64]
  %hk = convert(%xk) {dtype = DT} : DT[2,70,32]
  %hv = convert(%xv) {dtype = DT} : DT[2,70,32]
  %qs = reshape(%hq) {shape = [2, 70, 4, 16]} : DT[2,70,4,16]
  %q = transpose(%qs) {perm = [0, 2, 1, 3]} : DT[2,4,70,16]
  %ks = reshape(%hk) {shape = [2, 70, 2, 16]} : DT[2,70,2,16]
  %k = transpose(%ks) {perm = [0, 2, 1, 3]} : DT[2,2,70,16]
  %vs = reshape(%hv) {shape = [2, 70, 2, 16]} : DT[2,70,2,16]
  %v = transpose(%vs) {perm = [0, 2, 1, 3]} : DT[2,2,70,16]
  %o = Attention(%q, %k, %v, %m) {mask = "padding"} : DT[2,4,70,16]
  %t = transpose(%o) {perm = [0, 2, 1, 3]} : DT[2,70,4,16]
  %r = reshape(%t) {shape = [2, 70, 64]} : DT[2,70,64]
  %w = convert(%r) {dtype = f32} : f32[2,70,64]
  %c = Attention(%q, %k, %v) {mask = "causal"} : DT[2,4,70,16]
  %cw = convert(%c) {dtype = f32} : f32[2,4,70,16]
  return %w, %cw
}
)";

// Wider heads: D 64 over 130 keys without a mask, D 128 causal with more keys than queries (a
// prefix already in the cache), D 32 with a query of 16 rows.
const char* const kWideProgram =
    R"(graph @t(%a: f32[1,2,130,64], %b: f32[1,2,50,128], %bk: f32[1,2,90,128], %c: f32[3,3,16,32], %ck: f32[3,3,40,32]) {
  %ha = convert(%a) {dtype = DT} : DT[1,2,130,64]
  %oa = Attention(%ha, %ha, %ha) : DT[1,2,130,64]
  %hb = convert(%b) {dtype = DT} : DT[1,2,50,128]
  %hbk = convert(%bk) {dtype = DT} : DT[1,2,90,128]
  %ob = Attention(%hb, %hbk, %hbk) {mask = "causal", scale = 0.125} : DT[1,2,50,128]
  %hc = convert(%c) {dtype = DT} : DT[3,3,16,32]
  %hck = convert(%ck) {dtype = DT} : DT[3,3,40,32]
  %oc = Attention(%hc, %hck, %hck) : DT[3,3,16,32]
  %wa = convert(%oa) {dtype = f32} : f32[1,2,130,64]
  %wb = convert(%ob) {dtype = f32} : f32[1,2,50,128]
  %wc = convert(%oc) {dtype = f32} : f32[3,3,16,32]
  return %wa, %wb, %wc
}
)";

std::string with_dtype(std::string text, const std::string& dtype) {
  for (size_t at = text.find("DT"); at != std::string::npos; at = text.find("DT", at))
    text.replace(at, 2, dtype);
  return text;
}

void half_attention_agrees_with_cpu(const SuiteTarget& t) {
  std::mt19937 rng(23);
  auto random = [&](std::vector<int64_t> shape) { return uniform_f32(rng, std::move(shape), 1.0f); };
  std::vector<int64_t> keep(2 * 70, 1);
  for (int64_t j = 50; j < 70; ++j) keep[j] = 0;       // row 0: the last 20 keys are padding
  for (int64_t j = 0; j < 70; j += 3) keep[70 + j] = 0;  // row 1: every third key
  const NamedTensors split_in{{"xq", random({2, 70, 64})},
                              {"xk", random({2, 70, 32})},
                              {"xv", random({2, 70, 32})},
                              {"m", Tensor::from<int64_t>(DType::kI64, {2, 70}, keep)}};
  const NamedTensors wide_in{{"a", random({1, 2, 130, 64})}, {"b", random({1, 2, 50, 128})},
                             {"bk", random({1, 2, 90, 128})}, {"c", random({3, 3, 16, 32})},
                             {"ck", random({3, 3, 40, 32})}};
  for (const auto& [dtype, bound] : {std::pair<const char*, double>{"f16", 4e-3}, {"bf16", 3e-2}}) {
    for (const auto& [program, in] :
         {std::pair{kSplitMergeProgram, &split_in}, std::pair{kWideProgram, &wide_in}}) {
      const std::string ir = with_dtype(program, dtype);
      expect_all_close(run_text(ir, *in, cpu_target()), run_text(ir, *in, target_named(t.name)),
                       bound, std::string(dtype) + " attention");
    }
  }
}

void register_half_attention_tests(const SuiteTarget& t) {
  register_function_test(t, t.display + "Target", "HalfPrecisionAttentionAgreesWithCpu",
                         [t] { half_attention_agrees_with_cpu(t); });
}

const bool kRegistered = add_suite_extension(&register_half_attention_tests);

}  // namespace
}  // namespace rlx::test
