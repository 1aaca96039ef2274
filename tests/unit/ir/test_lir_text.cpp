// The textual LIR prints and parses back exactly, for programs the real pipeline produces and for
// hand-written text, and malformed text fails with line:column messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "rlx/core/error.h"
#include "rlx/core/lir.h"
#include "rlx/core/safetensors.h"
#include "shared_ir_target.h"

namespace rlx {
namespace {

using ir_test::lower;

// ---- field-by-field comparison ------------------------------------------------------------

void expect_same_tensor(const Tensor& a, const Tensor& b, const std::string& where) {
  ASSERT_EQ(a.data() != nullptr, b.data() != nullptr) << where;
  if (!a.data()) return;
  EXPECT_EQ(a.dtype(), b.dtype()) << where;
  EXPECT_EQ(a.shape(), b.shape()) << where;
  ASSERT_EQ(a.nbytes(), b.nbytes()) << where;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0) << where;
}

void expect_same_attrs(const Attrs& a, const Attrs& b, const std::string& where) {
  ASSERT_EQ(a.size(), b.size()) << where;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    std::string at = where + " attr " + ia->first;
    EXPECT_EQ(ia->first, ib->first) << at;
    EXPECT_EQ(ia->second.index(), ib->second.index()) << at;
    if (auto* t = std::get_if<Tensor>(&ia->second))
      expect_same_tensor(*t, std::get<Tensor>(ib->second), at);
    else
      EXPECT_EQ(attr_str(ia->second), attr_str(ib->second)) << at;
  }
}

void expect_same_expr(const lir::Expr& a, const lir::Expr& b, const std::string& where) {
  EXPECT_EQ(a.kind, b.kind) << where;
  EXPECT_EQ(a.dtype, b.dtype) << where;
  EXPECT_EQ(a.op, b.op) << where;
  EXPECT_EQ(a.args, b.args) << where;
  EXPECT_EQ(a.load.buffer, b.load.buffer) << where;
  EXPECT_EQ(a.load.offset, b.load.offset) << where;
  EXPECT_EQ(a.load.strides, b.load.strides) << where;
  ASSERT_EQ(a.load.guards.size(), b.load.guards.size()) << where;
  for (size_t i = 0; i < a.load.guards.size(); ++i) {
    EXPECT_EQ(a.load.guards[i].dim, b.load.guards[i].dim) << where;
    EXPECT_EQ(a.load.guards[i].lo, b.load.guards[i].lo) << where;
    EXPECT_EQ(a.load.guards[i].hi, b.load.guards[i].hi) << where;
  }
  EXPECT_TRUE(a.value == b.value || (std::isnan(a.value) && std::isnan(b.value))) << where;
  EXPECT_EQ(a.dim, b.dim) << where;
  EXPECT_EQ(a.lo, b.lo) << where;
  EXPECT_EQ(a.hi, b.hi) << where;
}

void expect_same_program(const lir::Program& a, const lir::Program& b, const std::string& where);

void expect_same_kernel(const lir::Kernel& a, const lir::Kernel& b, const std::string& where) {
  ASSERT_EQ(a.index(), b.index()) << where;
  if (auto* la = std::get_if<lir::LoopKernel>(&a)) {
    auto& lb = std::get<lir::LoopKernel>(b);
    EXPECT_EQ(la->name, lb.name) << where;
    EXPECT_EQ(la->domain, lb.domain) << where;
    EXPECT_EQ(la->num_parallel, lb.num_parallel) << where;
    EXPECT_EQ(la->reduce, lb.reduce) << where;
    ASSERT_EQ(la->exprs.size(), lb.exprs.size()) << where;
    for (size_t i = 0; i < la->exprs.size(); ++i)
      expect_same_expr(la->exprs[i], lb.exprs[i], where + " e" + std::to_string(i));
    ASSERT_EQ(la->stores.size(), lb.stores.size()) << where;
    for (size_t i = 0; i < la->stores.size(); ++i) {
      EXPECT_EQ(la->stores[i].buffer, lb.stores[i].buffer) << where;
      EXPECT_EQ(la->stores[i].expr, lb.stores[i].expr) << where;
    }
    return;
  }
  auto& ca = std::get<lir::CallKernel>(a);
  auto& cb = std::get<lir::CallKernel>(b);
  EXPECT_EQ(ca.callee, cb.callee) << where;
  EXPECT_EQ(ca.inputs, cb.inputs) << where;
  EXPECT_EQ(ca.outputs, cb.outputs) << where;
  expect_same_attrs(ca.attrs, cb.attrs, where);
  EXPECT_EQ(ca.loc, cb.loc) << where;
  ASSERT_EQ(ca.regions.size(), cb.regions.size()) << where;
  for (size_t r = 0; r < ca.regions.size(); ++r)
    expect_same_program(*ca.regions[r], *cb.regions[r], where + " region " + std::to_string(r));
}

void expect_same_program(const lir::Program& a, const lir::Program& b, const std::string& where) {
  EXPECT_EQ(a.arena_bytes, b.arena_bytes) << where;
  EXPECT_EQ(a.inputs, b.inputs) << where;
  EXPECT_EQ(a.outputs, b.outputs) << where;
  ASSERT_EQ(a.buffers.size(), b.buffers.size()) << where;
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    const lir::Buffer &x = a.buffers[i], &y = b.buffers[i];
    std::string at = where + " b" + std::to_string(i);
    EXPECT_EQ(x.id, y.id) << at;
    EXPECT_EQ(x.name, y.name) << at;
    EXPECT_EQ(x.dtype, y.dtype) << at;
    EXPECT_EQ(x.shape, y.shape) << at;
    EXPECT_EQ(x.kind, y.kind) << at;
    EXPECT_EQ(x.alias_of, y.alias_of) << at;
    EXPECT_EQ(x.arena_offset, y.arena_offset) << at;
    EXPECT_EQ(x.first_use, y.first_use) << at;
    EXPECT_EQ(x.last_use, y.last_use) << at;
    expect_same_tensor(x.data, y.data, at);
  }
  ASSERT_EQ(a.kernels.size(), b.kernels.size()) << where;
  for (size_t k = 0; k < a.kernels.size(); ++k)
    expect_same_kernel(a.kernels[k], b.kernels[k], where + " k" + std::to_string(k));
}

// print(parse(print(p))) == print(p), and the parsed program is p itself.
void expect_round_trip(const lir::Program& p) {
  std::string text = lir::print_program(p);
  lir::Program back = lir::parse_program(text, "round-trip.lir");
  EXPECT_EQ(lir::print_program(back), text);
  expect_same_program(p, back, "program");
}

bool has_expr(const lir::Program& p, lir::ExprKind kind) {
  for (auto& k : p.kernels)
    if (auto* l = std::get_if<lir::LoopKernel>(&k))
      for (auto& e : l->exprs)
        if (e.kind == kind) return true;
  return false;
}

const lir::CallKernel* find_call(const lir::Program& p, const std::string& callee) {
  for (auto& k : p.kernels)
    if (auto* c = std::get_if<lir::CallKernel>(&k); c && c->callee == callee) return c;
  return nullptr;
}

// ---- pipeline programs --------------------------------------------------------------------

TEST(LirText, ElementwiseFusionWithBroadcastAndTransposeRoundTrips) {
  auto p = lower(R"(graph @g(%x: f32[4,8], %"b/bias:0": f32[8]) {
  %bb = broadcast_in_dim(%"b/bias:0") {dims = [1], shape = [4, 8]} : f32[4,8]
  %a = add(%x, %bb) : f32[4,8]
  %e = exp(%a) : f32[4,8]
  %t = transpose(%e) {perm = [1, 0]} : f32[8,4]
  %y = neg(%t) : f32[8,4]
  return %y
}
)");
  ASSERT_EQ(p.kernels.size(), 1u);
  std::string text = lir::print_program(p);
  // Names that are not plain identifiers are quoted, as in the graph text.
  EXPECT_NE(text.find(R"(inputs(%x = b0, %"b/bias:0" = b1))"), std::string::npos) << text;
  EXPECT_NE(text.find("e2 = add(e0, e1) : f32"), std::string::npos) << text;
  expect_round_trip(p);
}

TEST(LirText, ReductionsRoundTrip) {
  auto p = lower(R"(graph @g(%x: f32[4,8]) {
  %y = Softmax(%x) {axis = -1} : f32[4,8]
  %s = reduce_sum(%x) {axes = [0]} : f32[8]
  return %y, %s
}
)");
  bool reduces = false;
  for (auto& k : p.kernels)
    if (auto* l = std::get_if<lir::LoopKernel>(&k)) reduces |= !l->reduce.empty();
  EXPECT_TRUE(reduces);
  expect_round_trip(p);
}

TEST(LirText, PadAndConcatGuardsRoundTrip) {
  auto p = lower(R"(graph @t(%a: f32[2,2], %b: f32[2,1], %p: f32[]) {
  %c = concat(%a, %b) {axis = 1} : f32[2,3]
  %y = pad(%c, %p) {high = [0, 2], low = [1, 0]} : f32[3,5]
  return %y
}
)");
  EXPECT_TRUE(has_expr(p, lir::ExprKind::kInRange));
  EXPECT_TRUE(has_expr(p, lir::ExprKind::kSelect));
  EXPECT_NE(lir::print_program(p).find(" where "), std::string::npos);
  expect_round_trip(p);
}

TEST(LirText, DotGeneralCallWithAttrsRoundTrips) {
  auto p = lower(R"(graph @t(%a: f32[2,3], %b: f32[3,4]) {
  %d = dot_general(%a, %b) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [0]} : f32[2,4]
  %y = tanh(%d) : f32[2,4]
  return %y
}
)");
  const lir::CallKernel* c = find_call(p, "dot_general");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->attrs.size(), 4u);
  expect_round_trip(p);
}

TEST(LirText, GatherWithConstantIndicesKeepsTheData) {
  auto p = lower(R"(graph @t(%x: f32[4,2]) {
  %i = constant() {value = dense<i64[3]: [3, 0, 2]>} : i64[3]
  %y = gather(%x, %i) {axis = 0} : f32[3,2]
  return %y
}
)");
  ASSERT_NE(find_call(p, "gather"), nullptr);
  EXPECT_NE(lir::print_program(p).find("= dense<i64[3]: [3, 0, 2]>"), std::string::npos)
      << lir::print_program(p);
  expect_round_trip(p);
}

TEST(LirText, WhileRegionsRoundTripAsNestedPrograms) {
  auto p = lower(R"(graph @t(%n: i64[]) {
  %zero = constant() {value = dense<i64[]: [0]>} : i64[]
  %i, %acc = while(%zero, %zero) : i64[], i64[] [
    graph @cond(%ci: i64[], %ca: i64[]) {
      %lim = constant() {value = dense<i64[]: [10]>} : i64[]
      %go = lt(%ci, %lim) : bool[]
      return %go
    },
    graph @body(%bi: i64[], %ba: i64[]) {
      %one = constant() {value = dense<i64[]: [1]>} : i64[]
      %next = add(%bi, %one) : i64[]
      %sum = add(%ba, %next) : i64[]
      return %next, %sum
    }
  ]
  %y = add(%acc, %n) : i64[]
  return %i, %y
}
)");
  const lir::CallKernel* w = find_call(p, "while");
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->regions.size(), 2u);
  EXPECT_FALSE(w->regions[0]->kernels.empty());
  expect_round_trip(p);
}

// ---- hand-written text --------------------------------------------------------------------

// Every buffer kind and optional field, every expression kind, a quoted op that collides with a
// keyword, a native call with tensor and other attribute kinds, loc, and nested regions.
const char* kCanonical = R"(lir.program arena 128 {
  inputs(%x = b0, %"in put" = b1)
  outputs(%y = b4, %"out:1" = b5)
  b0 = input %x : f32[2,3]
  b1 = input %"in put" : i32[3]
  b2 = constant %w : f16[2] live [0, 0] = dense<f16[2]: [0.5, -1.25]>
  b3 = temp %t : f32[2,3] at 0 live [0, 1]
  b4 = output %y : f32[3,2] live [1, 1]
  b5 = alias %"out:1" : f32[6] of b3
  k0 = loop @k0_fused domain [2, 3] parallel 2 {
    e0 = load b0 offset 0 strides [3, 1] : f32
    e1 = load b1 offset -1 strides [0, 1] where 1 <= i1 < 3 : i32
    e2 = convert(e1) : f32
    e3 = in_range 1 <= i1 < 3 : bool
    e4 = const 0.25 : f32
    e5 = select(e3, e2, e4) : f32
    e6 = index offset 2 strides [1, 0] : i64
    e7 = const -3 : i64
    e8 = mul(e6, e7) : i64
    e9 = "convert"(e8) : f32
    e10 = const inf : f32
    e11 = min(e10, e9) : f32
    e12 = add(e0, e11) : f32
    e13 = exp(e5) : f32
    store b3 <- e12
  }
  k1 = call native:MatMul(b3, b2) -> (b4) {alpha = 1.5, lut = dense<u8[2,2]: [1, 2, 3, 4]>, mode = "fast", n = 7, perm = [1, 0], shape = [N, 2], transpose = true, type = bf16} loc("fc1/matmul")
  k2 = call "my lib.op"() -> ()
  k3 = call while(b3) -> (b3) [
    lir.program arena 0 {
      inputs(%c = b0)
      outputs(%go = b1)
      b0 = input %c : f32[2,3]
      b1 = output %go : bool[] live [0, 0]
      k0 = loop @cond domain [] parallel 0 {
        e0 = const 1 : bool
        store b1 <- e0
      }
    },
    lir.program arena 0 {
      inputs()
      outputs()
    }
  ]
}
)";

TEST(LirText, CanonicalTextPrintsBackExactly) {
  lir::Program p = lir::parse_program(kCanonical, "canon.lir");
  EXPECT_EQ(lir::print_program(p), kCanonical);
  ASSERT_EQ(p.buffers.size(), 6u);
  EXPECT_EQ(p.buffers[5].alias_of, 3);
  EXPECT_EQ(p.storage_of(5), 3);
  auto& l = std::get<lir::LoopKernel>(p.kernels[0]);
  EXPECT_EQ(l.exprs[9].kind, lir::ExprKind::kUnary);
  EXPECT_EQ(l.exprs[9].op, "convert");
  EXPECT_EQ(l.exprs[2].kind, lir::ExprKind::kConvert);
  auto& c = std::get<lir::CallKernel>(p.kernels[1]);
  EXPECT_EQ(c.loc, "fc1/matmul");
  EXPECT_TRUE(std::holds_alternative<Tensor>(c.attrs.at("lut")));
  EXPECT_TRUE(std::holds_alternative<Shape>(c.attrs.at("shape")));
  expect_round_trip(p);
}

// ---- errors -------------------------------------------------------------------------------

std::string error_of(const std::string& text) {
  try {
    lir::parse_program(text, "bad.lir");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// A small valid program whose lines the error tests replace one at a time.
std::string with_line(const std::string& from, const std::string& to) {
  std::string text = R"(lir.program arena 0 {
  inputs(%x = b0)
  outputs(%y = b1)
  b0 = input %x : f32[4]
  b1 = output %y : f32[4] live [0, 0]
  k0 = loop @k0_exp domain [4] parallel 1 {
    e0 = load b0 offset 0 strides [1] : f32
    e1 = exp(e0) : f32
    store b1 <- e1
  }
}
)";
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(LirText, TheErrorTestBaseIsValid) {
  EXPECT_EQ(error_of(with_line("", "")), "no error");
}

TEST(LirText, UnknownBufferIsReportedWhereItIsUsed) {
  EXPECT_EQ(error_of(with_line("load b0", "load b7")),
            "bad.lir:7:15: buffer b7 does not exist (the program has 2)");
  EXPECT_EQ(error_of(with_line("store b1", "store b2")),
            "bad.lir:9:11: buffer b2 does not exist (the program has 2)");
  EXPECT_EQ(error_of(with_line("outputs(%y = b1)", "outputs(%y = b9)")),
            "bad.lir:3:16: buffer b9 does not exist (the program has 2)");
}

TEST(LirText, OperandsMustBeEarlierExpressions) {
  EXPECT_EQ(error_of(with_line("exp(e0)", "exp(e1)")),
            "bad.lir:8:14: e1 uses e1, which is not an earlier expression");
}

TEST(LirText, StridesMustMatchTheDomainRank) {
  EXPECT_EQ(error_of(with_line("strides [1]", "strides [1, 0]")),
            "bad.lir:7:35: 2 strides for a domain of rank 1");
}

TEST(LirText, StoredExpressionMustExist) {
  EXPECT_EQ(error_of(with_line("<- e1", "<- e5")),
            "bad.lir:9:17: store of e5, but the kernel has 2 expressions");
}

TEST(LirText, GuardsMustIndexTheDomain) {
  EXPECT_EQ(error_of(with_line("strides [1] :", "strides [1] where 0 <= i1 < 2 :")),
            "bad.lir:7:50: loop index i1 is outside the domain of rank 1");
}

TEST(LirText, LabelsMustBeInOrder) {
  EXPECT_EQ(error_of(with_line("e1 = exp", "e2 = exp")),
            "bad.lir:8:5: e2 is out of order: expressions are numbered from e0, so e1 comes next");
}

TEST(LirText, MalformedSyntaxSaysWhatWasExpected) {
  EXPECT_EQ(error_of(with_line("f32[4] live", "f64x[4] live")),
            "bad.lir:5:20: unknown dtype 'f64x'");
  EXPECT_EQ(error_of(with_line("exp(e0) : f32", "exp(e0)")),
            "bad.lir:9:5: expected ':' before the expression's dtype");
  EXPECT_EQ(error_of(with_line("= output", "= scratch")),
            "bad.lir:5:8: unknown buffer kind 'scratch' (input, output, constant, temp, alias)");
  EXPECT_EQ(error_of(with_line("parallel 1", "parallel 2")),
            "bad.lir:6:41: parallel 2 is outside the domain of rank 1");
  EXPECT_EQ(error_of(with_line("exp(e0)", "select(e0)")),
            "bad.lir:8:10: select takes 3 operands, got 1");
  EXPECT_EQ(
      error_of(with_line("b1 = output %y : f32[4] live [0, 0]\n", "b1 = alias %y : f32[4]\n")),
      "bad.lir:5:3: alias b1 needs 'of bN' naming the buffer it reinterprets");
  EXPECT_EQ(error_of(with_line("}\n}\n", "}\n}\nextra\n")),
            "bad.lir:12:1: unexpected text after the program");
  EXPECT_EQ(error_of("lir.program arena 0 {\n  inputs()\n  outputs()\n  b0 = constant %c : "
                     "i64[2] = dense<i64[2]: [1]>\n}\n"),
            "bad.lir:4:45: 1 values for i64[2], which holds 2");
}

// ---- constants in a side file ----------------------------------------------------------------

// A large constant at the top and in a while region, and a small one that stays in the text.
const char* kWithConstants = R"(lir.program arena 0 {
  inputs(%x = b0)
  outputs(%y = b1)
  b0 = input %x : f32[20]
  b1 = output %y : f32[20] live [0, 1]
  b2 = constant %w : f32[20] live [0, 0] = dense<f32[20]: [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0]>
  b3 = constant %s : i64[3] live [0, 0] = dense<i64[3]: [3, 0, 2]>
  k0 = loop @k0_add domain [20] parallel 1 {
    e0 = load b0 offset 0 strides [1] : f32
    e1 = load b2 offset 0 strides [1] : f32
    e2 = add(e0, e1) : f32
    store b1 <- e2
  }
  k1 = call while(b1) -> (b1) [
    lir.program arena 0 {
      inputs(%c = b0)
      outputs(%go = b1)
      b0 = input %c : f32[20]
      b1 = output %go : bool[] live [0, 0]
      b2 = constant %lim : f64[9] live [0, 0] = dense<f64[9]: [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]>
    },
    lir.program arena 0 {
      inputs()
      outputs()
    }
  ]
}
)";

// Bit patterns decimal text is most likely to lose: -0, a subnormal, a NaN payload, the extremes.
lir::Program with_tricky_weights() {
  lir::Program p = lir::parse_program(kWithConstants, "constants.lir");
  const uint32_t bits[] = {0x80000000u, 0x00000001u, 0x7FC12345u, 0xFF800000u, 0x7F7FFFFFu,
                           0x3EAAAAABu, 0x00800000u, 0xBF800001u};
  for (size_t i = 0; i < std::size(bits); ++i)
    std::memcpy(p.buffers[2].data.as<float>() + i, &bits[i], 4);
  return p;
}

TEST(LirText, LargeConstantsGoToTheSideFileAndReadBackExactly) {
  lir::Program p = with_tricky_weights();
  lir::ExternalData ext{"model.lir.safetensors", {}};
  std::string text = lir::print_program(p, &ext);
  EXPECT_NE(text.find(R"(b2 = constant %w : f32[20] live [0, 0] = external<"model.lir.safetensors": "b2">)"),
            std::string::npos) << text;
  EXPECT_NE(text.find(R"(= external<"model.lir.safetensors": "k1.r0.b2">)"), std::string::npos) << text;
  // 24 bytes: below kInlineConstantBytes, so it stays readable in the text.
  EXPECT_NE(text.find("= dense<i64[3]: [3, 0, 2]>"), std::string::npos) << text;
  ASSERT_EQ(ext.tensors.size(), 2u);
  // The side map shares the program's data: printing copies nothing.
  EXPECT_EQ(ext.tensors.at("b2").data(), p.buffers[2].data.data());

  lir::Program back = lir::parse_program(text, "split.lir", &ext);
  expect_same_program(p, back, "program");
  lir::ExternalData again{"model.lir.safetensors", {}};
  EXPECT_EQ(lir::print_program(back, &again), text);
  // Without a side file the text is the one the tests above pin.
  EXPECT_EQ(lir::print_program(back), lir::print_program(p));
}

TEST(LirText, WriteProgramKeepsConstantsBesideTheText) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("rlx_lir_file_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "model.lir").string();
  lir::Program p = with_tricky_weights();
  lir::write_program(path, p);
  EXPECT_TRUE(fs::exists(path + ".safetensors"));
  lir::Program back = lir::read_program(path);
  expect_same_program(p, back, "program");
  uint32_t b0 = 0, b2 = 0;
  std::memcpy(&b0, back.buffers[2].data.as<float>(), 4);
  std::memcpy(&b2, back.buffers[2].data.as<float>() + 2, 4);
  EXPECT_EQ(b0, 0x80000000u);  // -0 stays -0
  EXPECT_EQ(b2, 0x7FC12345u);  // the NaN keeps its payload

  // A program without large constants needs no side file, and a stale one is removed.
  lir::Program small = lir::parse_program(with_line("", ""), "small.lir");
  lir::write_program(path, small);
  EXPECT_FALSE(fs::exists(path + ".safetensors"));
  EXPECT_EQ(lir::print_program(lir::read_program(path)), lir::print_program(small));
  fs::remove_all(dir);
}

TEST(LirText, ExternalConstantsNeedTheirSideFile) {
  lir::Program p = with_tricky_weights();
  lir::ExternalData ext{"model.lir.safetensors", {}};
  std::string text = lir::print_program(p, &ext);
  EXPECT_EQ(error_of(text),
            "bad.lir:6:44: b2's data is in the side file \"model.lir.safetensors\": read the text "
            "with lir::read_program(path), which loads it");
  auto parse_with = [&](lir::ExternalData e) -> std::string {
    try {
      lir::parse_program(text, "bad.lir", &e);
    } catch (const Error& err) {
      return err.what();
    }
    return "no error";
  };
  lir::ExternalData other = ext;
  other.file = "other.safetensors";
  EXPECT_EQ(parse_with(other),
            "bad.lir:6:44: b2's data is in \"model.lir.safetensors\", but the side file given is "
            "\"other.safetensors\"");
  lir::ExternalData missing = ext;
  missing.tensors.erase("b2");
  EXPECT_EQ(parse_with(missing),
            "bad.lir:6:44: the side file \"model.lir.safetensors\" has no tensor \"b2\" for b2");
  lir::ExternalData wrong = ext;
  wrong.tensors["b2"] = Tensor(DType::kF32, {4, 5});
  EXPECT_EQ(parse_with(wrong),
            "bad.lir:6:44: tensor \"b2\" of \"model.lir.safetensors\" is f32[4,5], but b2 is f32[20]");
}

// Weights that are unchanged views of a mapped safetensors file are linked, not copied; weights
// changed in memory (or a file changed on disk) are copied, so the folder always holds what ran.
TEST(LirText, WriteProgramLinksUnchangedMappedWeights) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("rlx_lir_link_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "out");
  lir::Program p = with_tricky_weights();
  write_safetensors(dir / "weights.safetensors", {{"w.top", p.buffers[2].data}});
  TensorMap mapped = map_safetensors(dir / "weights.safetensors");
  p.buffers[2].data = mapped.at("w.top");
  ASSERT_TRUE(mapped_origin(p.buffers[2].data).has_value());
  EXPECT_EQ(mapped_origin(p.buffers[2].data)->name, "w.top");

  const std::string path = (dir / "out" / "model.lir").string();
  std::vector<std::string> sides = lir::write_program(path, p);
  // b2 lives in the linked file; the region's f64 constant is copied into model.lir.safetensors.
  EXPECT_EQ(sides, (std::vector<std::string>{"model.lir.safetensors",
                                             "model.lir.weights.safetensors"}));
  EXPECT_TRUE(fs::equivalent(dir / "out" / "model.lir.weights.safetensors",
                             dir / "weights.safetensors"));
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find(R"(= external<"model.lir.weights.safetensors": "w.top">)"), std::string::npos)
      << text;
  lir::Program back = lir::read_program(path);
  expect_same_program(p, back, "linked");

  // Written in memory: the file no longer holds these bytes, so they are copied.
  p.buffers[2].data.as<float>()[19] = 42.0f;
  EXPECT_FALSE(mapped_origin(p.buffers[2].data).has_value());
  sides = lir::write_program(path, p);
  EXPECT_EQ(sides, (std::vector<std::string>{"model.lir.safetensors"}));
  EXPECT_FALSE(fs::exists(dir / "out" / "model.lir.weights.safetensors"));  // stale link removed
  back = lir::read_program(path);
  EXPECT_EQ(back.buffers[2].data.as<float>()[19], 42.0f);
  expect_same_program(p, back, "copied");

  // Replaced on disk after mapping: not the file that was mapped any more.
  TensorMap again = map_safetensors(dir / "weights.safetensors");
  ASSERT_TRUE(mapped_origin(again.at("w.top")).has_value());
  write_safetensors(dir / "weights.tmp", {{"w.top", Tensor(DType::kF32, {20})}});
  fs::rename(dir / "weights.tmp", dir / "weights.safetensors");
  EXPECT_FALSE(mapped_origin(again.at("w.top")).has_value());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rlx
