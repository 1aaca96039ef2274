// MIR (with the HIR ops the target claims) -> a MIL program: one function "main" whose block
// takes the graph's inputs and returns its outputs, then two int32 scalars per gather (the first
// out-of-range index position, or the index count when none, and its value): CoreML's gather
// does not check indices, so whoever runs the package raises the error rlx promises.
//
// Value representation: f32, f16, i32 and bool as themselves; an i64 value (the split-i64
// rewrite leaves them only at the program's edges and in bitcasts) as its int32 words
// [..., 2], low word first. CoreML's multi-arrays have no bool, so a bool input or output
// crosses the boundary as int32 0/1.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "blob_storage.h"
#include "mil_block.h"
#include "rlx/core/graph.h"
#include "rlx/core/target.h"

namespace rlx::ane {

// The OS release a package is made for: the MIL opset and the model specification version.
struct Deployment {
  std::string name = "iOS17";
  std::string opset = "CoreML7";
  int spec_version = 8;
};
// iOS15..iOS18 and macOS12..macOS15; nullptr when `name` is none of them.
const Deployment* find_deployment(const std::string& name);
// The names find_deployment takes, comma-separated.
const char* deployment_names();

// A program input or output as CoreML sees it.
struct IoValue {
  std::string name;    // the feature name (the MIR value's name made an identifier)
  std::string source;  // the MIR value's name
  DType dtype;         // rlx's dtype
  MilType mil;         // how the package holds it
  std::string layout;  // "" or how it differs from rlx's dtype ("i64 as int32 word pairs")
};

struct IndexCheck {
  std::string op;     // "gather"
  std::string node;   // the node, as messages name it
  int64_t count = 0;  // number of indices
  int64_t axis_size = 0;
  std::string position, value;  // the two output names
};

struct MilProgram {
  mil::Program program;
  BlobStorage blobs;
  std::vector<IoValue> inputs, outputs;
  std::vector<IndexCheck> checks;
};

// The path const ops give for the package's weights file.
inline constexpr const char* kWeightsFile = "@model_path/weights/weight.bin";

// `g` is specialised (static shapes). Throws kUnsupported naming the node for what MIL cannot
// express (the checks below refuse it earlier).
MilProgram lower_to_mil(const Graph& g, const Deployment& deployment);

// Whether lower_to_mil takes this MIR primitive at these dtypes, with the reason when not.
Verdict can_lower(const NodeSignature& s);
// The HIR ops emitted as one MIL op (Linear -> linear, LayerNorm -> layer_norm, Softmax ->
// softmax, GELU -> gelu, MatMul -> matmul), for f32 nodes, and QMatMul (int8 weights held as
// constexpr_affine_dequantize; mil_native.h).
bool is_native_op(const std::string& op);
Verdict claim(const NodeSignature& s);

}  // namespace rlx::ane
