// The dispatch contract: IR text in, exact report or diagnostic out.
#include <gtest/gtest.h>

#include "rlx/core/dispatch.h"
#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/op_registry.h"
#include "test_support.h"

namespace rlx {
namespace {

// A target whose code generator takes f32 primitives only (convert at any dtype) and has no
// exp: enough to exercise every path and every refusal.
class ToyTarget : public Target {
 public:
  std::string name() const override { return "toy"; }
  Verdict claim_native(const NodeSignature& s) const override {
    if (s.op == "RMSNorm") return Verdict::yes();
    return Verdict::no("toy has no native " + s.op);
  }
  Verdict accepts_primitive(const NodeSignature& s) const override {
    if (s.op == "exp") return Verdict::no("toy cannot compute exp");
    if (s.op == "convert") return Verdict::yes();
    for (auto* list : {&s.inputs, &s.outputs})
      for (auto& t : *list)
        if (t.dtype != DType::kF32 && t.dtype != DType::kBool)
          return Verdict::no("toy computes in f32 only, not " + std::string(dtype_name(t.dtype)));
    // An accepted primitive with a note of how it runs.
    if (s.op == "dot_general") return Verdict{true, "toy multiplies by hand"};
    return Verdict::yes();
  }
  Verdict can_execute() const override { return Verdict::no("toy only dispatches"); }
  std::unique_ptr<Executable> compile(const lir::Program&) override { return nullptr; }
  std::vector<Artifact> emit(const lir::Program&, const std::filesystem::path&) override { return {}; }
};

TEST(Dispatch, EachPathIsChosenAndReported) {
  Graph g = parse_graph(R"(graph @g(%x: f32[2,4], %g: f32[4], %h: f16[2,4]) {
  %n = RMSNorm(%x, %g) : f32[2,4]
  %a = Add(%n, %x) : f32[2,4]
  %b = Add(%h, %h) : f16[2,4]
  return %a, %b
}
)");
  ToyTarget toy;
  DispatchResult r = dispatch(g, toy);
  ASSERT_EQ(r.report.entries.size(), 3u);
  EXPECT_EQ(r.report.entries[0].path, LoweringPath::kNative);
  EXPECT_EQ(r.report.entries[1].path, LoweringPath::kSharedIr);
  EXPECT_EQ(r.report.entries[2].path, LoweringPath::kRewritten);
  EXPECT_EQ(r.report.entries[2].detail, "compute-in-f32");
  // Native was refused; the decomposition became legal because its f16 add was rewritten.
  EXPECT_EQ(r.report.entries[2].refused, (std::vector<std::string>{"native: toy has no native Add"}));
  // The rewritten form holds only legal primitives: f16 appears only around converts.
  for (const Node& n : r.graph.nodes)
    if (n.op != "convert" && n.op != "RMSNorm") EXPECT_TRUE(toy.accepts_primitive({n.op, {r.graph.type(n.inputs[0])}, {r.graph.type(n.outputs[0])}, n.attrs}).ok) << n.op;
}

// A primitive's note lands on the node it came from, once however many primitives carry it, in
// the text and the JSON; nodes without such primitives have none.
TEST(Dispatch, AcceptedPrimitivesNotesReachTheirNode) {
  Graph g = parse_graph(R"(graph @g(%x: f32[2,3,4], %w: f32[4,5], %v: f32[5,6]) {
  %y = MatMul(%x, %w) : f32[2,3,5]
  %z = MatMul(%y, %v) : f32[2,3,6]
  %a = Add(%z, %z) : f32[2,3,6]
  return %a
}
)");
  ToyTarget toy;
  DispatchResult r = dispatch(g, toy);
  ASSERT_EQ(r.report.entries.size(), 3u);
  const std::vector<std::string> note{"dot_general: toy multiplies by hand"};
  EXPECT_EQ(r.report.entries[0].notes, note);
  EXPECT_EQ(r.report.entries[1].notes, note);
  EXPECT_TRUE(r.report.entries[2].notes.empty());
  const std::string text = r.report.to_text();
  EXPECT_NE(text.find("primitives; dot_general: toy multiplies by hand"), std::string::npos)
      << text;
  EXPECT_NE(r.report.to_json().find("\"notes\": [\"dot_general: toy multiplies by hand\"]"),
            std::string::npos);
}

TEST(Dispatch, NoLegalPathNamesTheNodeAndEveryRefusal) {
  Graph g = parse_graph(R"(graph @g(%x: f32[2,4]) {
  %s = Softmax(%x) {axis = -1} : f32[2,4] loc("encoder/attn/softmax")
  return %s
}
)",
                        "m.rlx");
  ToyTarget toy;
  try {
    dispatch(g, toy);
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot compile node %s (Softmax 'encoder/attn/softmax') for target 'toy': no lowering path is legal\n"
              "  op Softmax, dtypes f32 -> f32\n"
              "  native: toy has no native Softmax\n"
              "  shared IR: needs exp (f32 -> f32), and primitive: toy cannot compute exp; rewritten: no registered rewrite applies to exp\n"
              "  rewritten: no registered rewrite applies to Softmax\n"
              "  what to do: choose a target that supports this op and dtype (rlx --list-targets -v), "
              "or convert the model to a supported dtype");
  }
}

TEST(Dispatch, CpuRewritesConvThroughIm2col) {
  Graph g = parse_graph(R"(graph @g(%x: f32[1,2,5,5], %w: f32[3,2,3,3]) {
  %y = Conv(%x, %w) : f32[1,3,3,3]
  return %y
}
)");
  DispatchResult r = dispatch(g, *test::cpu_target());
  ASSERT_EQ(r.report.entries.size(), 1u);
  EXPECT_EQ(r.report.entries[0].path, LoweringPath::kRewritten);
  EXPECT_EQ(r.report.entries[0].detail, "conv-im2col");
  EXPECT_EQ(r.report.entries[0].refused,
            (std::vector<std::string>{"native: cpu has no native kernel for Conv",
                                      "shared IR: Conv has no MIR decomposition"}));
}

// A c64 Add has no kernel on cpu: it is computed on its parts, and the report says so.
TEST(Dispatch, CpuSplitsComplexIntoPartsAndSaysWhy) {
  Graph g = parse_graph(R"(graph @g(%x: c64[4]) {
  %y = Add(%x, %x) : c64[4]
  return %y
}
)");
  DispatchResult r = dispatch(g, *test::cpu_target());
  ASSERT_EQ(r.report.entries.size(), 1u);
  EXPECT_EQ(r.report.entries[0].path, LoweringPath::kRewritten);
  EXPECT_EQ(r.report.entries[0].detail, "split-complex");
  const std::string text = r.report.to_text(true);
  EXPECT_NE(text.find("rewritten  via split-complex"), std::string::npos) << text;
}

TEST(Dispatch, CpuLegalityCoversEveryOp) {
  // Every op the registry defines has a legal path on cpu at f32 (n/a entries aside).
  for (const OpDef& def : OpRegistry::instance().ops()) {
    OpLegality l = op_legality(def.name, DType::kF32, *test::cpu_target());
    EXPECT_TRUE(l.kind != OpLegality::kIllegal) << def.name << ": " << l.detail;
  }
}

}  // namespace
}  // namespace rlx
