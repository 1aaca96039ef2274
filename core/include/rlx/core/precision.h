// The precision policy: a pass over a model graph that the user asks for (`--precision`,
// compile(precision=)), never a target. It narrows f32 computation to f16 or bf16, inserts a
// convert at every boundary between the narrow and the f32 part, and returns what it changed so
// the dispatch report can show each change. Graph inputs and outputs keep their types: callers
// pass and receive f32 as before.
#pragma once
#include <string>
#include <vector>

#include "rlx/core/graph.h"

namespace rlx {

enum class PrecisionMode {
  kAsIs,     // "f32": the model's own dtypes, nothing changed
  kF16,      // every op of the graph families computes on f16 values
  kBF16,     // the same with bf16
  kAmpF16,   // products, convolutions and attention in f16; the rest in f32
  kAmpBF16,  // the same with bf16
};

// "f32", "f16", "bf16", "amp-f16" or "amp-bf16"; anything else is a user error listing those.
PrecisionMode parse_precision(const std::string& text);
std::string precision_name(PrecisionMode mode);
inline constexpr const char* kPrecisionChoices = "f32, f16, bf16, amp-f16 or amp-bf16";

struct PrecisionReport {
  std::string mode;                 // as parse_precision spells it
  std::vector<std::string> narrowed;  // nodes now computing in the narrow type, described
  std::vector<std::string> casts;     // each convert inserted: "%x f32 -> f16 for %h (Linear 'fc1')"
  std::vector<std::string> weights;   // weights stored narrow: "encoder.w: f32 -> f16"
  std::vector<std::string> tf32;      // f32 products allowed TF32 (--allow-tf32, allow_tf32())
  bool changed() const { return !narrowed.empty(); }
};

// Applies `mode` to g (not to the bodies of while loops, which keep their dtypes). f64 values are
// never narrowed. A weight outside f16's range under an f16 mode is a user error naming it
// (f16 would turn it into infinity); bf16 has f32's range.
PrecisionReport apply_precision(Graph& g, PrecisionMode mode);

}  // namespace rlx
