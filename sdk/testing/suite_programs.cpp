// The programs the shared target tests run (target_suite.h): texts in the IR's syntax, and the
// set of programs that together hold every kind of kernel a GPU-like target writes (which the
// codegen-only tests compile for targets without a device).
#include <fmt/format.h>

#include <random>

#include "rlx/core/half.h"
#include "target_suite.h"
#include "test_support.h"

namespace rlx::test {

const char* const kEmitProgram = R"(graph @t(%a: f32[2,3], %b: f32[3,2], %i: i64[2]) {
  %y = dot_general(%a, %b) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [0]} : f32[2,2]
  %g = gather(%y, %i) {axis = 0} : f32[2,2]
  %e = exp(%g) : f32[2,2]
  return %e
}
)";

const char* const kEpilogueProgram =
    R"(graph @t(%x: f32[2,37,19], %w: f32[70,19], %b: f32[70], %r: f32[2,37,70], %w2: f32[70,19], %w3: f32[70,19]) {
  %y = dot_general(%x, %w) {lhs_batch = [], lhs_contract = [2], rhs_batch = [], rhs_contract = [1]} : f32[2,37,70]
  %bb = broadcast_in_dim(%b) {dims = [2], shape = [2, 37, 70]} : f32[2,37,70]
  %z = add(%y, %bb) : f32[2,37,70]
  %th = tanh(%z) : f32[2,37,70]
  %g = mul(%z, %th) : f32[2,37,70]
  %o = add(%g, %r) : f32[2,37,70]
  %v = dot_general(%x, %w2) {lhs_batch = [], lhs_contract = [2], rhs_batch = [], rhs_contract = [1]} : f32[2,37,70]
  %h = convert(%v) {dtype = f16} : f16[2,37,70]
  %e = exp(%v) : f32[2,37,70]
  %u = dot_general(%x, %w3) {lhs_batch = [], lhs_contract = [2], rhs_batch = [], rhs_contract = [1]} : f32[2,37,70]
  %ub = add(%u, %bb) : f32[2,37,70]
  %us = reshape(%ub) {shape = [2, 37, 7, 10]} : f32[2,37,7,10]
  %ut = transpose(%us) {perm = [0, 2, 1, 3]} : f32[2,7,37,10]
  return %o, %h, %v, %e, %ut
}
)";

const char* const kMergeHeadsProgram =
    R"(graph @t(%q: f32[2,3,20,8], %k: f32[2,3,20,8], %v: f32[2,3,20,8], %qd: f32[2,3,2,8]) {
  %o = Attention(%q, %k, %v) {mask = "causal"} : f32[2,3,20,8]
  %t = transpose(%o) {perm = [0, 2, 1, 3]} : f32[2,20,3,8]
  %m = reshape(%t) {shape = [2, 20, 24]} : f32[2,20,24]
  %od = Attention(%qd, %k, %v) : f32[2,3,2,8]
  %td = transpose(%od) {perm = [0, 2, 1, 3]} : f32[2,2,3,8]
  return %m, %td
}
)";

const char* const kNormProductProgram =
    R"(graph @t(%x: f32[1,1,200], %g: f32[200], %b: f32[200], %w: f16[72,200], %w2: f32[40,200]) {
  %n = RMSNorm(%x, %g) {epsilon = 1e-06} : f32[1,1,200]
  %nh = convert(%n) {dtype = f16} : f16[1,1,200]
  %y = dot_general(%nh, %w) {lhs_batch = [], lhs_contract = [2], rhs_batch = [], rhs_contract = [1]} : f16[1,1,72]
  %yf = convert(%y) {dtype = f32} : f32[1,1,72]
  %l = LayerNorm(%x, %g, %b) {epsilon = 1e-05} : f32[1,1,200]
  %z = dot_general(%l, %w2) {lhs_batch = [], lhs_contract = [2], rhs_batch = [], rhs_contract = [1]} : f32[1,1,40]
  %s = RMSNorm(%x, %b) {epsilon = 1e-05} : f32[1,1,200]
  %v = dot_general(%s, %w2) {lhs_batch = [], lhs_contract = [2], rhs_batch = [], rhs_contract = [1]} : f32[1,1,40]
  %r = RMSNorm(%x) {epsilon = 1e-06} : f32[1,1,200]
  %u = dot_general(%r, %w2) {lhs_batch = [], lhs_contract = [2], rhs_batch = [], rhs_contract = [1]} : f32[1,1,40]
  return %yf, %z, %v, %u, %r
}
)";

const char* const kComputedOperandProgram =
    R"(graph @t(%h: f16[1,1,160], %r: f32[1,1,48], %w: f16[48,80], %x2: f32[2,1,64], %w2: f32[2,24,64]) {
  %g = slice(%h) {limit = [1, 1, 80], start = [0, 0, 0], strides = [1, 1, 1]} : f16[1,1,80]
  %u = slice(%h) {limit = [1, 1, 160], start = [0, 0, 80], strides = [1, 1, 1]} : f16[1,1,80]
  %gf = convert(%g) {dtype = f32} : f32[1,1,80]
  %uf = convert(%u) {dtype = f32} : f32[1,1,80]
  %s = logistic(%gf) : f32[1,1,80]
  %a = mul(%gf, %s) : f32[1,1,80]
  %m = mul(%a, %uf) : f32[1,1,80]
  %mh = convert(%m) {dtype = f16} : f16[1,1,80]
  %y = dot_general(%mh, %w) {lhs_batch = [], lhs_contract = [2], rhs_batch = [], rhs_contract = [1]} : f16[1,1,48]
  %yf = convert(%y) {dtype = f32} : f32[1,1,48]
  %o = add(%yf, %r) : f32[1,1,48]
  %e = exp(%x2) : f32[2,1,64]
  %z = dot_general(%e, %w2) {lhs_batch = [0], lhs_contract = [2], rhs_batch = [0], rhs_contract = [2]} : f32[2,1,24]
  return %o, %z
}
)";

const char* const kScatterUpdatesProgram =
    R"(graph @t(%past_k: f32[1,2,8,16], %past_v: f16[1,2,8,16], %position: i64[1], %kv: f32[1,1,64], %c: f32[8], %s: f32[8]) {
  %k = slice(%kv) {limit = [1, 1, 32], start = [0, 0, 0], strides = [1, 1, 1]} : f32[1,1,32]
  %kr = reshape(%k) {shape = [1, 1, 2, 16]} : f32[1,1,2,16]
  %kt = transpose(%kr) {perm = [0, 2, 1, 3]} : f32[1,2,1,16]
  %k1 = slice(%kt) {limit = [1, 2, 1, 8], start = [0, 0, 0, 0], strides = [1, 1, 1, 1]} : f32[1,2,1,8]
  %k2 = slice(%kt) {limit = [1, 2, 1, 16], start = [0, 0, 0, 8], strides = [1, 1, 1, 1]} : f32[1,2,1,8]
  %cb = broadcast_in_dim(%c) {dims = [3], shape = [1, 2, 1, 8]} : f32[1,2,1,8]
  %sb = broadcast_in_dim(%s) {dims = [3], shape = [1, 2, 1, 8]} : f32[1,2,1,8]
  %a1 = mul(%k1, %cb) : f32[1,2,1,8]
  %b1 = mul(%k2, %sb) : f32[1,2,1,8]
  %r1 = sub(%a1, %b1) : f32[1,2,1,8]
  %a2 = mul(%k2, %cb) : f32[1,2,1,8]
  %b2 = mul(%k1, %sb) : f32[1,2,1,8]
  %r2 = add(%a2, %b2) : f32[1,2,1,8]
  %rot = concat(%r1, %r2) {axis = 3} : f32[1,2,1,16]
  %v = slice(%kv) {limit = [1, 1, 64], start = [0, 0, 32], strides = [1, 1, 1]} : f32[1,1,32]
  %vr = reshape(%v) {shape = [1, 1, 2, 16]} : f32[1,1,2,16]
  %vt = transpose(%vr) {perm = [0, 2, 1, 3]} : f32[1,2,1,16]
  %v16 = convert(%vt) {dtype = f16} : f16[1,2,1,16]
  %pk = scatter(%past_k, %position, %rot) {axis = 2, reduce = "none"} : f32[1,2,8,16]
  %pv = scatter(%past_v, %position, %v16) {axis = 2, reduce = "none"} : f16[1,2,8,16]
  return %pk, %pv
}
)";

const char* const kComputedQueryProgram =
    R"(graph @t(%qx: f32[1,1,64], %c: f32[8], %s: f32[8], %k: f32[1,2,10,16], %v: f32[1,2,10,16], %keep: bool[1,10]) {
  %qr = reshape(%qx) {shape = [1, 1, 4, 16]} : f32[1,1,4,16]
  %qt = transpose(%qr) {perm = [0, 2, 1, 3]} : f32[1,4,1,16]
  %q1 = slice(%qt) {limit = [1, 4, 1, 8], start = [0, 0, 0, 0], strides = [1, 1, 1, 1]} : f32[1,4,1,8]
  %q2 = slice(%qt) {limit = [1, 4, 1, 16], start = [0, 0, 0, 8], strides = [1, 1, 1, 1]} : f32[1,4,1,8]
  %cb = broadcast_in_dim(%c) {dims = [3], shape = [1, 4, 1, 8]} : f32[1,4,1,8]
  %sb = broadcast_in_dim(%s) {dims = [3], shape = [1, 4, 1, 8]} : f32[1,4,1,8]
  %a1 = mul(%q1, %cb) : f32[1,4,1,8]
  %b1 = mul(%q2, %sb) : f32[1,4,1,8]
  %r1 = sub(%a1, %b1) : f32[1,4,1,8]
  %a2 = mul(%q2, %cb) : f32[1,4,1,8]
  %b2 = mul(%q1, %sb) : f32[1,4,1,8]
  %r2 = add(%a2, %b2) : f32[1,4,1,8]
  %rot = concat(%r1, %r2) {axis = 3} : f32[1,4,1,16]
  %o = Attention(%rot, %k, %v, %keep) {mask = "padding", scale = 0.25} : f32[1,4,1,16]
  return %o
}
)";

const char* const kNormedRotationProgram =
    R"(graph @t(%qkv: f32[1,1,96], %gq: f32[16], %gk: f32[16], %c: f32[8], %s: f32[8], %past_k: f32[1,2,8,16], %position: i64[1], %v: f32[1,2,8,16], %keep: bool[1,8]) {
  %q = slice(%qkv) {limit = [1, 1, 64], start = [0, 0, 0], strides = [1, 1, 1]} : f32[1,1,64]
  %qr = reshape(%q) {shape = [1, 1, 4, 16]} : f32[1,1,4,16]
  %qn = RMSNorm(%qr, %gq) {epsilon = 1e-06} : f32[1,1,4,16]
  %qt = transpose(%qn) {perm = [0, 2, 1, 3]} : f32[1,4,1,16]
  %q1 = slice(%qt) {limit = [1, 4, 1, 8], start = [0, 0, 0, 0], strides = [1, 1, 1, 1]} : f32[1,4,1,8]
  %q2 = slice(%qt) {limit = [1, 4, 1, 16], start = [0, 0, 0, 8], strides = [1, 1, 1, 1]} : f32[1,4,1,8]
  %cq = broadcast_in_dim(%c) {dims = [3], shape = [1, 4, 1, 8]} : f32[1,4,1,8]
  %sq = broadcast_in_dim(%s) {dims = [3], shape = [1, 4, 1, 8]} : f32[1,4,1,8]
  %qa = mul(%q1, %cq) : f32[1,4,1,8]
  %qb = mul(%q2, %sq) : f32[1,4,1,8]
  %qc = sub(%qa, %qb) : f32[1,4,1,8]
  %qd = mul(%q2, %cq) : f32[1,4,1,8]
  %qe = mul(%q1, %sq) : f32[1,4,1,8]
  %qf = add(%qd, %qe) : f32[1,4,1,8]
  %rq = concat(%qc, %qf) {axis = 3} : f32[1,4,1,16]
  %k = slice(%qkv) {limit = [1, 1, 96], start = [0, 0, 64], strides = [1, 1, 1]} : f32[1,1,32]
  %kr = reshape(%k) {shape = [1, 1, 2, 16]} : f32[1,1,2,16]
  %kn = RMSNorm(%kr, %gk) {epsilon = 1e-06} : f32[1,1,2,16]
  %kt = transpose(%kn) {perm = [0, 2, 1, 3]} : f32[1,2,1,16]
  %k1 = slice(%kt) {limit = [1, 2, 1, 8], start = [0, 0, 0, 0], strides = [1, 1, 1, 1]} : f32[1,2,1,8]
  %k2 = slice(%kt) {limit = [1, 2, 1, 16], start = [0, 0, 0, 8], strides = [1, 1, 1, 1]} : f32[1,2,1,8]
  %ck = broadcast_in_dim(%c) {dims = [3], shape = [1, 2, 1, 8]} : f32[1,2,1,8]
  %sk = broadcast_in_dim(%s) {dims = [3], shape = [1, 2, 1, 8]} : f32[1,2,1,8]
  %ka = mul(%k1, %ck) : f32[1,2,1,8]
  %kb = mul(%k2, %sk) : f32[1,2,1,8]
  %kc = sub(%ka, %kb) : f32[1,2,1,8]
  %kd = mul(%k2, %ck) : f32[1,2,1,8]
  %ke = mul(%k1, %sk) : f32[1,2,1,8]
  %kf = add(%kd, %ke) : f32[1,2,1,8]
  %rk = concat(%kc, %kf) {axis = 3} : f32[1,2,1,16]
  %pk = scatter(%past_k, %position, %rk) {axis = 2, reduce = "none"} : f32[1,2,8,16]
  %o = Attention(%rq, %pk, %v, %keep) {mask = "padding", scale = 0.25} : f32[1,4,1,16]
  return %pk, %o
}
)";

const char* const kSplitHeadsProgram =
    R"(graph @t(%xq: f32[2,20,32], %xk: f32[2,20,16], %xv: f32[2,20,16], %xd: f32[2,2,32], %yk: f32[2,20,16], %yv: f32[2,20,16]) {
  %qs = reshape(%xq) {shape = [2, 20, 4, 8]} : f32[2,20,4,8]
  %q = transpose(%qs) {perm = [0, 2, 1, 3]} : f32[2,4,20,8]
  %ks = reshape(%xk) {shape = [2, 20, 2, 8]} : f32[2,20,2,8]
  %k = transpose(%ks) {perm = [0, 2, 1, 3]} : f32[2,2,20,8]
  %vs = reshape(%xv) {shape = [2, 20, 2, 8]} : f32[2,20,2,8]
  %v = transpose(%vs) {perm = [0, 2, 1, 3]} : f32[2,2,20,8]
  %o = Attention(%q, %k, %v) {mask = "causal"} : f32[2,4,20,8]
  %ds = reshape(%xd) {shape = [2, 2, 4, 8]} : f32[2,2,4,8]
  %qd = transpose(%ds) {perm = [0, 2, 1, 3]} : f32[2,4,2,8]
  %ks2 = reshape(%yk) {shape = [2, 20, 2, 8]} : f32[2,20,2,8]
  %k2 = transpose(%ks2) {perm = [0, 2, 1, 3]} : f32[2,2,20,8]
  %vs2 = reshape(%yv) {shape = [2, 20, 2, 8]} : f32[2,20,2,8]
  %v2 = transpose(%vs2) {perm = [0, 2, 1, 3]} : f32[2,2,20,8]
  %od = Attention(%qd, %k2, %v2) : f32[2,4,2,8]
  return %o, %od
}
)";

namespace {

// q, k and v of one fused projection's [2, 80, 64] rows `input`: column slices 0-31, 32-47 and
// 48-63 split into 2 query heads and 1 kv head of 16, as %<input>q [2, 2, 80, 16], %<input>k and
// %<input>v [2, 1, 80, 16].
std::string sliced_heads(const std::string& input, const std::string& dtype) {
  struct Part {
    const char* name;
    int begin, end, heads;
  };
  std::string text;
  for (const Part& part : {Part{"q", 0, 32, 2}, Part{"k", 32, 48, 1}, Part{"v", 48, 64, 1}})
    text += fmt::format(
        "  %{0}{1}s = slice(%{0}) {{limit = [2, 80, {3}], start = [0, 0, {2}], strides = [1, 1, "
        "1]}} : {5}[2,80,{6}]\n"
        "  %{0}{1}r = reshape(%{0}{1}s) {{shape = [2, 80, {4}, 16]}} : {5}[2,80,{4},16]\n"
        "  %{0}{1} = transpose(%{0}{1}r) {{perm = [0, 2, 1, 3]}} : {5}[2,{4},80,16]\n",
        input, part.name, part.begin, part.end, part.heads, dtype, part.end - part.begin);
  return text;
}

}  // namespace

// Attentions of sliced heads: in f32 under a padding mask, in f16 (h is x rounded; the
// tensor-core kernel's dtype on cuda) under the same mask, and in f32 with q computed from its
// slice (a rotation's place in a decoder), which an attention may compute itself while it reads
// k and v from the same buffer in place.
std::string sliced_heads_program() {
  return "graph @t(%x: f32[2,80,64], %keep: bool[2,80], %h: f16[2,80,64], %y: f32[2,80,64]) {\n" +
         sliced_heads("x", "f32") +
         "  %o = Attention(%xq, %xk, %xv, %keep) {mask = \"padding\"} : f32[2,2,80,16]\n" +
         sliced_heads("h", "f16") +
         "  %o16 = Attention(%hq, %hk, %hv, %keep) {mask = \"padding\"} : f16[2,2,80,16]\n"
         "  %of = convert(%o16) {dtype = f32} : f32[2,2,80,16]\n" +
         sliced_heads("y", "f32") +
         "  %q3 = neg(%yq) : f32[2,2,80,16]\n"
         "  %o3 = Attention(%q3, %yk, %yv) {mask = \"causal\"} : f32[2,2,80,16]\n"
         "  return %o, %of, %o3\n}\n";
}

const char* const kMixedProgram =
    R"(graph @t(%a: f32[2,3,4], %b: f32[2,4,5], %ids: i64[3], %h: f16[2,3]) {
  %d = dot_general(%a, %b) {lhs_batch = [0], lhs_contract = [2], rhs_batch = [0], rhs_contract = [1]} : f32[2,3,5]
  %m = reduce_max(%d) {axes = [2]} : f32[2,3]
  %t = tanh(%m) : f32[2,3]
  %r = reshape(%d) {shape = [6, 5]} : f32[6,5]
  %g = gather(%r, %ids) {axis = 0} : f32[3,5]
  %s = scatter(%r, %ids, %g) {axis = 0, reduce = "add"} : f32[6,5]
  %hc = convert(%t) {dtype = f16} : f16[2,3]
  %hs = mul(%hc, %h) : f16[2,3]
  %it = iota() {dim = 1, dtype = i64, shape = [2, 3]} : i64[2,3]
  %ip = pow(%it, %it) : i64[2,3]
  return %s, %t, %hs, %ip, %g
}
)";

NamedTensors mixed_program_inputs() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(24), b(40), h(6);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  for (auto& x : h) x = u(rng);
  Tensor hh(DType::kF16, {2, 3});
  for (int i = 0; i < 6; ++i) hh.as<uint16_t>()[i] = f32_to_f16(h[i]);
  return {{"a", f32({2, 3, 4}, a)},
          {"b", f32({2, 4, 5}, b)},
          {"ids", Tensor::from<int64_t>(DType::kI64, {3}, {5, -6, 5})},
          {"h", hh}};
}

std::vector<NamedProgram> every_kernel_programs() {
  std::vector<NamedProgram> out;
  const char* float_unary[] = {"neg", "abs", "sign", "exp",   "log",  "sqrt",  "rsqrt",   "tanh",
                               "erf", "sin", "cos",  "floor", "ceil", "round", "logistic"};
  const char* float_binary[] = {"add", "sub", "mul", "div", "max", "min", "pow", "rem"};
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    const std::string t = fmt::format("{}[6]", dtype_name(d));
    std::string body, outs;
    for (const char* op : float_unary) {
      body += fmt::format("  %{0} = {0}(%x) : {1}\n", op, t);
      outs += fmt::format("{}%{}", outs.empty() ? "" : ", ", op);
    }
    for (const char* op : float_binary) {
      body += fmt::format("  %{0} = {0}(%x, %y) : {1}\n", op, t);
      outs += fmt::format(", %{}", op);
    }
    body += fmt::format("  %s = reduce_sum(%x) {{axes = [0]}} : {0}[]\n", dtype_name(d));
    body += fmt::format(
        "  %c = convert(%x) {{dtype = i32}} : i32[6]\n  %sel = select(%p, %x, %y) : {}\n", t);
    out.push_back(
        {fmt::format("graph @t(%x: {0}, %y: {0}, %p: bool[6]) {{\n{1}  return {2}, %s, %c, %sel\n}}\n",
                     t, body, outs),
         std::string(dtype_name(d))});
  }
  const char* int_binary[] = {"add", "sub", "mul", "div", "rem", "max", "min", "pow"};
  for (DType d : {DType::kI8, DType::kU8, DType::kI16, DType::kI32, DType::kI64, DType::kU16,
                  DType::kU32, DType::kU64}) {
    const std::string t = fmt::format("{}[6]", dtype_name(d));
    std::string body, outs;
    for (const char* op : int_binary) {
      body += fmt::format("  %{0} = {0}(%x, %y) : {1}\n", op, t);
      outs += fmt::format("{}%{}", outs.empty() ? "" : ", ", op);
    }
    body += fmt::format(
        "  %f = convert(%x) {{dtype = f16}} : f16[6]\n  %s = reduce_sum(%x) {{axes = [0]}} : "
        "{}[]\n",
        dtype_name(d));
    out.push_back(
        {fmt::format("graph @t(%x: {0}, %y: {0}) {{\n{1}  return {2}, %f, %s\n}}\n", t, body, outs),
         std::string(dtype_name(d))});
  }
  out.push_back({"graph @t(%x: bool[6], %y: bool[6]) {\n  %a = and(%x, %y) : bool[6]\n  %n = "
                 "not(%x) : bool[6]\n  %f = convert(%x) {dtype = f32} : f32[6]\n  return %a, %n, "
                 "%f\n}\n",
                 "bool"});
  out.push_back({kMixedProgram, "kMixedProgram"});
  out.push_back({kEpilogueProgram, "kEpilogueProgram"});
  out.push_back({kMergeHeadsProgram, "kMergeHeadsProgram"});
  out.push_back({kSplitHeadsProgram, "kSplitHeadsProgram"});
  out.push_back({sliced_heads_program(), "sliced_heads_program"});
  out.push_back({kNormProductProgram, "kNormProductProgram"});
  out.push_back({kComputedOperandProgram, "kComputedOperandProgram"});
  out.push_back({kScatterUpdatesProgram, "kScatterUpdatesProgram"});
  out.push_back({kComputedQueryProgram, "kComputedQueryProgram"});
  out.push_back({kNormedRotationProgram, "kNormedRotationProgram"});
  out.push_back({"graph @t(%x: f32[4,96], %s: f32[96], %b: f32[96]) {\n"
                 "  %l = LayerNorm(%x, %s, %b) {epsilon = 1e-5} : f32[4,96]\n"
                 "  %r = RMSNorm(%x, %s) {epsilon = 1e-6} : f32[4,96]\n  return %l, %r\n}\n",
                 "norms"});
  return out;
}

}  // namespace rlx::test
