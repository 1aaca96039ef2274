// Turns checkpoint tensors into graph params for the model builders. Shapes are checked against
// what the config implies, so a wrong config or a foreign checkpoint fails at build time with a
// message naming the tensor, instead of as an opaque shape error deep inside a graph.
//
// Weights in a block format (GGUF's q4_k, q8_0, ...) stay in that format in the graph: matrices
// are multiplied by DequantMatMul and embedding tables gathered as byte rows then decoded by
// DequantizeRows, so only vectors (norms, biases) are ever decoded at load time.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "layers.h"
#include "rlx/core/builder.h"
#include "rlx/frontends/builders.h"

namespace rlx::frontends::detail {

class Params {
 public:
  Params(GraphBuilder& b, const WeightSource& source, std::string what)
      : b_(b), source_(source), what_(std::move(what)) {}

  bool has(const std::string& name) const { return source_.has(name); }
  // A vector or small tensor converted to f32: 16-bit checkpoints through a Cast node (so the IR
  // says what happens to the stored values); a block-format tensor decoded at load, which is
  // exact (f32 holds every value a block decodes to, the same values DequantMatMul uses).
  ValueId f32(const std::string& name, const std::vector<int64_t>& shape);
  std::optional<ValueId> optional_f32(const std::string& name, const std::vector<int64_t>& shape);
  // A Linear layer's weight [out, in]: f32 as above, or block rows for DequantMatMul.
  LinearWeight matrix(const std::string& name, int64_t out, int64_t in);
  // The rows of several weights [out_i, in] as one f32 matrix, one param named by
  // rlx/core/fused_weights.h, for products of one input fused into one; nullopt unless every
  // part is a plain float tensor of one dtype with the implied shape, not used before (block
  // formats and int8 keep a product each).
  std::optional<ValueId> fused_f32(const std::vector<std::pair<std::string, int64_t>>& parts,
                                   int64_t in);
  // x W_i^T (+ b_i) for each part (name prefix, rows) of a layer reading one input x [B, S, in],
  // the weights at prefix + ".weight" and biases at prefix + ".bias": one product over the rows
  // put together, sliced after, where fused_f32 joins them and either all or none has a bias;
  // a product each otherwise. A GPU step is bound by how many products it launches
  // (bench/RESULTS.md, "Fused products of one input"), and a CPU reads x once.
  std::vector<ValueId> products(const std::vector<std::pair<std::string, int64_t>>& parts,
                                int64_t in, ValueId x);
  // Rows `ids` of the table [rows, width] as f32 [..., width]. The table is gathered in its
  // stored form, so only the rows used are converted or decoded.
  ValueId embedding(const std::string& name, int64_t rows, int64_t width, ValueId ids);

 private:
  // The weight as a param in its stored form: a float dtype, or u8 [rows, row bytes] with
  // `qtype` naming the block format. A weight used twice (a tied embedding) is one param.
  struct Stored {
    ValueId v = kNoValue;
    std::string qtype;
    ValueId scale = kNoValue, x_scale = kNoValue, x_zero = kNoValue;  // int8 (Weight::scale)
    ValueId x_smooth = kNoValue;  // int8 static, smoothed (Weight::input_smooth)
  };
  const Stored& stored(const std::string& name, const std::vector<int64_t>& shape);
  Weight fetch(const std::string& name) const;  // throws naming the weight when it is missing
  const Stored& keep(const std::string& name, const Weight& w, const std::vector<int64_t>& shape);
  const Stored& keep_int8(const std::string& name, const Weight& w,
                          const std::vector<int64_t>& shape);

  GraphBuilder& b_;
  const WeightSource& source_;
  std::string what_;  // "qwen3 model", for messages
  std::map<std::string, Stored> stored_;
  std::map<std::string, ValueId> cast_;
};

// Stored dtype to f32 (identity for f32).
ValueId to_f32(GraphBuilder& b, ValueId x);

}  // namespace rlx::frontends::detail
