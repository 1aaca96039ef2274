// The refusals several targets share, each worded once: what is not a MIR primitive, the f64
// policy (f64 is computed in f64 or refused, never narrowed to f32), and the 8/16-bit integer
// policy (never widened behind the user's back). A target composes them in accepts_primitive()
// and adds what only it knows (its device's features).
#pragma once
#include <initializer_list>
#include <string>
#include <string_view>

#include "rlx/core/lir.h"
#include "rlx/core/target.h"

namespace rlx::sdk {

// Whether any input or output of the node has dtype `d`.
bool uses(const NodeSignature& s, DType d);
// Whether every input and output has one of the dtypes `ok`.
bool only_uses(const NodeSignature& s, std::initializer_list<DType> ok);

// "<op> is not a MIR primitive" for HIR ops (a code generator takes primitives only), else yes.
Verdict primitive_only(const NodeSignature& s);

// "<language> has no complex type, so <target> has no c64 kernel for <op>: split complex values
// into real and imaginary parts before compiling" when the node uses c64, else yes.
Verdict refuse_complex(const NodeSignature& s, std::string_view language, std::string_view target);

// The f64 policy: "<lacks>, so <who> cannot compute <what> in f64; convert the model to f32
// first (rlx never narrows f64 silently)".
Verdict refuse_f64(std::string_view lacks, std::string_view who, std::string_view what);
// The same policy once the program is lowered (decompositions write scalars as f64 constants
// that folding removes, so legality lets f64 constants through): throws ErrorKind::kUnsupported
// "<lacks>, but <buffer or kernel> of the compiled program is f64; ..." when one reached it.
void check_no_f64(const lir::Program& program, std::string_view lacks);
// The first buffer or kernel (regions included) of `program` that holds or computes `dtype`, as
// "buffer NAME" or "kernel NAME"; empty when none does.
std::string dtype_use(const lir::Program& program, DType dtype);

// The 8/16-bit integer policy, for languages without such arithmetic types: "<language> has no
// 8- or 16-bit integer types, so <target> cannot compute the <dtype> values of <op>;
// <alternative>convert them to i32 first (rlx never changes a dtype silently)" when the node
// uses i8, u8 or i16, else yes. `alternative` is advice put first ("use --target vulkan, or ").
Verdict refuse_narrow_integers(const NodeSignature& s, std::string_view language,
                               std::string_view target, std::string_view alternative = "");

// What every native kernel of the HIR op Attention (q [B,H,Sq,D], k [B,Hkv,Sk,D], v
// [B,Hkv,Sk,Dv] [, mask]) needs of its node, whatever the target: one output, rank-4 operands
// with static head counts and head dims that fit one attention (H a multiple of Hkv), a mask
// attribute of none, causal or padding with a [batch, kv_seq] mask input exactly for padding, a
// numeric scale. yes, or no with the reason as a phrase a target puts after its kernel's name
// ("needs q, k, v and one output").
Verdict attention_form(const NodeSignature& s);

// What every native kernel of the HIR ops LayerNorm and RMSNorm (x [..., n] [, scale [n]
// [, bias [n]]], over the last axis) needs of its node: one output, x of rank >= 1 with a static
// last dim, rank-1 scale and bias of that size, a numeric epsilon. yes, or no with the reason as
// a phrase put after the kernel's name ("needs a static last dim").
Verdict norm_form(const NodeSignature& s);

}  // namespace rlx::sdk
