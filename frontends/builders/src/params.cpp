#include "params.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "rlx/core/error.h"
#include "rlx/core/fused_weights.h"
#include "rlx/core/quant.h"

namespace rlx::frontends::detail {

ValueId to_f32(GraphBuilder& b, ValueId x) {
  if (b.type(x).dtype == DType::kF32) return x;
  return b.op("Cast", {x}, {{"dtype", DType::kF32}});
}

namespace {

// Checks a block-format weight against the logical shape the config implies: its bytes must be
// rows of whole blocks, one row per element of the leading dims.
void check_quantized(const std::string& what, const std::string& name, const Weight& w,
                     const std::vector<int64_t>& shape) {
  const quant::QTypeInfo* q = quant::find_qtype(w.qtype);
  if (!q)
    throw_user_error(fmt::format("{}: weight '{}' is stored as '{}', a format rlx cannot decode",
                                 what, name, w.qtype));
  if (w.shape != shape)
    throw_user_error(fmt::format("{}: weight '{}' has shape [{}], the config implies [{}]", what,
                                 name, fmt::join(w.shape, ", "), fmt::join(shape, ", ")));
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  const int64_t k = shape.empty() ? 1 : shape.back();
  std::optional<int64_t> row_bytes = quant::row_bytes(q->type, k);
  if (!row_bytes)
    throw_user_error(
        fmt::format("{}: weight '{}' ({}) has rows of {} elements, not a whole "
                    "number of {}-element blocks",
                    what, name, w.qtype, k, q->block_size));
  const std::vector<int64_t> raw_shape = {rows, *row_bytes};
  if (!w.raw.defined() || w.raw.dtype() != DType::kU8 || w.raw.shape() != raw_shape)
    throw_user_error(fmt::format("{}: weight '{}' ({}) should be u8 [{}] bytes, got {} [{}]", what,
                                 name, w.qtype, fmt::join(raw_shape, ", "),
                                 w.raw.defined() ? dtype_name(w.raw.dtype()) : "nothing",
                                 fmt::join(w.raw.shape(), ", ")));
}

// A copy of a small tensor (scales) with another shape of the same element count.
Tensor reshaped(const Tensor& t, std::vector<int64_t> shape) {
  Tensor r(t.dtype(), std::move(shape));
  std::memcpy(r.data(), t.data(), t.nbytes());
  return r;
}

}  // namespace

Weight Params::fetch(const std::string& name) const {
  if (!source_.has(name))
    throw_user_error(fmt::format("{}: weight '{}' is missing from the checkpoint", what_, name));
  return source_.get(name);
}

const Params::Stored& Params::keep(const std::string& name, const Weight& w,
                                   const std::vector<int64_t>& shape) {
  if (!w.qtype.empty()) {
    check_quantized(what_, name, w, shape);
    return stored_.emplace(name, Stored{b_.param(name, w.raw), w.qtype}).first->second;
  }
  const Tensor& t = w.dense;
  if (!t.defined()) throw_user_error(fmt::format("{}: weight '{}' has no data", what_, name));
  if (w.scale.defined()) return keep_int8(name, w, shape);
  if (t.shape() != shape)
    throw_user_error(fmt::format("{}: weight '{}' has shape [{}], the config implies [{}]", what_,
                                 name, fmt::join(t.shape(), ", "), fmt::join(shape, ", ")));
  if (!is_float(t.dtype()) || t.dtype() == DType::kC64)
    throw_user_error(fmt::format("{}: weight '{}' is {}, a real floating-point dtype is needed",
                                 what_, name, dtype_name(t.dtype())));
  return stored_.emplace(name, Stored{b_.param(name, t), ""}).first->second;
}

const Params::Stored& Params::keep_int8(const std::string& name, const Weight& w,
                                        const std::vector<int64_t>& shape) {
  const Tensor& t = w.dense;
  if (t.dtype() != DType::kI8 || t.shape() != shape || shape.size() != 2 ||
      w.scale.dtype() != DType::kF32 || w.scale.numel() != shape[0])
    throw_user_error(fmt::format(
        "{}: weight '{}' should be i8 [{}] with f32 [{}] scales (rlx quantize's int8 layout), "
        "got {} [{}] and {} [{}]",
        what_, name, fmt::join(shape, ", "), shape.empty() ? 0 : shape[0], dtype_name(t.dtype()),
        fmt::join(t.shape(), ", "), dtype_name(w.scale.dtype()), fmt::join(w.scale.shape(), ", ")));
  Stored s{b_.param(name, t), ""};
  s.scale = b_.param(name + "_scale", reshaped(w.scale, {shape[0]}));
  if (w.input_scale.defined()) {
    if (w.input_scale.dtype() != DType::kF32 || w.input_scale.numel() != 1 ||
        !w.input_zero.defined() || w.input_zero.dtype() != DType::kU8 ||
        w.input_zero.numel() != 1)
      throw_user_error(fmt::format(
          "{}: weight '{}' needs one f32 input_scale and one u8 input_zero_point", what_, name));
    s.x_scale = b_.param(name + ".input_scale", reshaped(w.input_scale, {}));
    s.x_zero = b_.param(name + ".input_zero_point", reshaped(w.input_zero, {}));
    if (w.input_smooth.defined())
      s.x_smooth = b_.param(name + ".input_smooth", reshaped(w.input_smooth, {shape[1]}));
  }
  return stored_.emplace(name, s).first->second;
}

const Params::Stored& Params::stored(const std::string& name, const std::vector<int64_t>& shape) {
  if (auto it = stored_.find(name); it != stored_.end()) return it->second;
  return keep(name, fetch(name), shape);
}

ValueId Params::f32(const std::string& name, const std::vector<int64_t>& shape) {
  if (auto it = cast_.find(name); it != cast_.end()) return it->second;
  auto it = stored_.find(name);
  const Stored* s = it == stored_.end() ? nullptr : &it->second;
  ValueId v;
  if (!s) {
    Weight w = fetch(name);
    if (!w.qtype.empty()) {
      // Decoded once here rather than per run: the builders ask for vectors (norms, biases)
      // this way, and f32 holds exactly the values DequantMatMul would decode them to.
      check_quantized(what_, name, w, shape);
      Tensor t(DType::kF32, shape);
      quant::dequantize(quant::find_qtype(w.qtype)->type, w.raw.data(), t.as<float>(), t.numel());
      v = b_.param(name, t);
      cast_.emplace(name, v);
      return v;
    }
    s = &keep(name, w, shape);
  }
  if (!s->qtype.empty())
    throw_internal_error(
        fmt::format("{}: weight '{}' is asked for as f32 after being used as {} block rows", what_,
                    name, s->qtype));
  // Narrowing is never silent (docs/architecture.md: f64 -> f32 only when the user asks).
  if (b_.type(s->v).dtype == DType::kF64)
    throw_user_error(
        fmt::format("{}: weight '{}' is f64; the model builders compute in f32 and "
                    "do not narrow f64 weights silently: convert the checkpoint",
                    what_, name));
  v = to_f32(b_, s->v);
  cast_.emplace(name, v);
  return v;
}

std::optional<ValueId> Params::optional_f32(const std::string& name,
                                            const std::vector<int64_t>& shape) {
  if (!source_.has(name)) return std::nullopt;
  return f32(name, shape);
}

LinearWeight Params::matrix(const std::string& name, int64_t out, int64_t in) {
  const Stored& s = stored(name, {out, in});
  if (s.scale != kNoValue) return LinearWeight{s.v, "", s.scale, s.x_scale, s.x_zero, s.x_smooth};
  if (s.qtype.empty()) return LinearWeight{f32(name, {out, in}), ""};
  return LinearWeight{s.v, s.qtype};
}

std::optional<ValueId> Params::fused_f32(const std::vector<std::pair<std::string, int64_t>>& parts,
                                        int64_t in) {
  std::vector<Tensor> rows;
  std::vector<std::string> names;
  int64_t total = 0;
  for (const auto& [name, out] : parts) {
    if (stored_.count(name) || cast_.count(name) || !source_.has(name)) return std::nullopt;
    Weight w = fetch(name);
    const Tensor& t = w.dense;
    if (!w.qtype.empty() || w.scale.defined() || !t.defined() ||
        t.shape() != std::vector<int64_t>{out, in} || !is_float(t.dtype()) ||
        t.dtype() == DType::kC64 || t.dtype() == DType::kF64 ||
        (!rows.empty() && t.dtype() != rows[0].dtype()))
      return std::nullopt;
    rows.push_back(t);
    names.push_back(name);
    total += out;
  }
  Tensor all(rows[0].dtype(), {total, in});
  auto* dst = static_cast<char*>(all.data());
  for (const Tensor& t : rows) {
    std::memcpy(dst, t.data(), t.nbytes());
    dst += t.nbytes();
  }
  return to_f32(b_, b_.param(fused_weight_name(names), all));
}

std::vector<ValueId> Params::products(const std::vector<std::pair<std::string, int64_t>>& parts,
                                      int64_t in, ValueId x) {
  std::vector<std::pair<std::string, int64_t>> weights;
  size_t biased = 0;
  for (const auto& [name, out] : parts) {
    weights.emplace_back(name + ".weight", out);
    biased += has(name + ".bias");
  }
  std::optional<ValueId> fused;
  if (biased == 0 || biased == parts.size()) fused = fused_f32(weights, in);
  std::vector<ValueId> ys;
  if (!fused) {
    for (const auto& [name, out] : parts)
      ys.push_back(
          linear(b_, x, matrix(name + ".weight", out, in), optional_f32(name + ".bias", {out})));
    return ys;
  }
  std::optional<ValueId> bias;
  if (biased) {
    std::vector<ValueId> biases;
    for (const auto& [name, out] : parts) biases.push_back(f32(name + ".bias", {out}));
    bias = b_.concat(biases, 0);
  }
  ValueId y = linear(b_, x, LinearWeight{*fused, ""}, bias);
  int64_t at = 0;
  for (const auto& part : parts) {
    ys.push_back(b_.slice(y, {0, 0, at}, {-1, -1, at + part.second}));
    at += part.second;
  }
  return ys;
}

ValueId Params::embedding(const std::string& name, int64_t rows, int64_t width, ValueId ids) {
  const Stored& s = stored(name, {rows, width});
  ValueId gathered = b_.op("Embedding", {s.v, ids});
  if (s.qtype.empty()) return to_f32(b_, gathered);
  return b_.op("DequantizeRows", {gathered}, {{"qtype", s.qtype}, {"k", width}});
}

}  // namespace rlx::frontends::detail
