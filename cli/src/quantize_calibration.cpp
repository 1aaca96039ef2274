#include "quantize_calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include "errors.h"
#include "rlx/core/error.h"
#include "rlx/core/fused_weights.h"
#include "rlx/core/progress.h"
#include "rlx/core/runtime.h"
#include "rlx/core/safetensors.h"
#include "tensor_rows.h"

namespace rlx::cli {

namespace {

// The param a weight operand reads, through a dtype Cast of 16-bit checkpoints.
std::optional<ValueId> param_behind(const Graph& g, ValueId v) {
  const Value& val = g.values[v];
  if (val.producer < 0)
    return std::find(g.params.begin(), g.params.end(), v) != g.params.end()
               ? std::optional<ValueId>(v)
               : std::nullopt;
  const Node& n = g.nodes[val.producer];
  if (n.op == "Cast" && n.inputs.size() == 1) return param_behind(g, n.inputs[0]);
  return std::nullopt;
}

// What one Linear's activations showed: the extremes, and for percentile a sample of values.
struct Observed {
  float lo = 0, hi = 0;
  std::vector<float> sample;
  ChannelRanges channels;
};

constexpr size_t kSampleCap = 1 << 20;  // values kept per layer for percentiles

// Which rows of a batch's activations are real tokens: where the model takes an
// attention_mask [rows, tokens] (the Hugging Face encoders' padding mask), its non-zero entries;
// empty (every row) otherwise. Padding rows are not what the layers will multiply.
std::vector<bool> real_rows(const NamedTensors& in) {
  auto it = in.find("attention_mask");
  if (it == in.end() || it->second.rank() != 2) return {};
  const Tensor& m = it->second;
  std::vector<bool> keep(static_cast<size_t>(m.numel()));
  for (int64_t i = 0; i < m.numel(); ++i) {
    if (m.dtype() == DType::kI64)
      keep[i] = m.as<int64_t>()[i] != 0;
    else if (m.dtype() == DType::kI32)
      keep[i] = m.as<int32_t>()[i] != 0;
    else
      return {};
  }
  return keep;
}

// The rows of t (its last axis) that `keep` keeps (all when it is empty or does not match).
void observe(const Tensor& t, const std::vector<bool>& keep, bool keep_sample, Observed& o) {
  const auto* x = t.as<float>();
  const int64_t n = t.numel(), k = t.shape().back(), rows = n / k;
  const bool masked = static_cast<int64_t>(keep.size()) == rows;
  ChannelRanges& c = o.channels;
  if (c.lo.empty())
    c.lo.assign(static_cast<size_t>(k), 0.0f), c.hi.assign(static_cast<size_t>(k), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    if (!masked || keep[r])
      for (int64_t j = 0; j < k; ++j)
        c.lo[j] = std::min(c.lo[j], x[r * k + j]), c.hi[j] = std::max(c.hi[j], x[r * k + j]);
  // The tensor's extremes are its channels' (both start at 0).
  o.lo = std::min(o.lo, *std::min_element(c.lo.begin(), c.lo.end()));
  o.hi = std::max(o.hi, *std::max_element(c.hi.begin(), c.hi.end()));
  if (!keep_sample) return;
  const int64_t stride = std::max<int64_t>(1, n / static_cast<int64_t>(kSampleCap / 16));
  for (int64_t i = 0; i < n && o.sample.size() < kSampleCap; i += stride)
    if (!masked || keep[i / k]) o.sample.push_back(x[i]);
}

// X^T X += the rows of t (its last axis is k) that `keep` keeps (all when it is empty or does
// not match t's rows).
void add_rows(const Tensor& t, const std::vector<bool>& keep, Gram& g) {
  const int64_t k = t.shape().back(), rows = t.numel() / k;
  if (!g.xtx) g.k = k, g.xtx = std::make_shared<std::vector<double>>(static_cast<size_t>(k * k));
  const float* x = t.as<float>();
  if (static_cast<int64_t>(keep.size()) != rows) {
    g.rows += rows;
    return quant::add_gram(x, rows, k, g.xtx->data());
  }
  std::vector<float> kept;
  for (int64_t r = 0; r < rows; ++r)
    if (keep[r]) kept.insert(kept.end(), x + r * k, x + (r + 1) * k);
  g.rows += static_cast<int64_t>(kept.size()) / k;
  quant::add_gram(kept.data(), static_cast<int64_t>(kept.size()) / k, k, g.xtx->data());
}

float quantile(std::vector<float>& v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<size_t>(std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// The columns of a batch that hold a real token: one past the last column real_rows() keeps in
// any row, or -1 when the inputs are not all [rows, tokens] beside an attention_mask (the
// columns after it are padding in every row, which the layers' statistics leave out anyway).
int64_t real_columns(const NamedTensors& in) {
  const std::vector<bool> keep = real_rows(in);
  if (keep.empty()) return -1;
  const std::vector<int64_t>& shape = in.at("attention_mask").shape();
  for (const auto& [name, t] : in)
    if (t.shape() != shape) return -1;
  const int64_t rows = shape[0], cols = shape[1];
  int64_t last = 1;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = cols - 1; c >= last; --c)
      if (keep[r * cols + c]) {
        last = c + 1;
        break;
      }
  return last;
}

// The first `width` columns of t [rows, cols].
Tensor first_columns(const Tensor& t, int64_t width) {
  const int64_t rows = t.shape()[0], cols = t.shape()[1];
  const size_t es = dtype_size(t.dtype());
  Tensor out(t.dtype(), {rows, width});
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(static_cast<char*>(out.data()) + static_cast<size_t>(r * width) * es,
                static_cast<const char*>(t.data()) + static_cast<size_t>(r * cols) * es,
                static_cast<size_t>(width) * es);
  return out;
}

std::set<std::string> values_of(const std::vector<std::pair<std::string, std::string>>& watched) {
  std::set<std::string> out;
  for (const auto& [weight, value] : watched) out.insert(value);
  return out;
}

}  // namespace

std::map<std::string, ValueId> linear_weights(const Graph& g) {
  // A weight also read another way (a tied embedding table gathered by Embedding) stays as it
  // is: only a Linear knows what to do with int8 rows and their scales.
  std::set<ValueId> other_use;
  for (const Node& n : g.nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.op == "Cast" || (n.op == "Linear" && i == 1)) continue;
      if (auto p = param_behind(g, n.inputs[i])) other_use.insert(*p);
    }
  std::map<std::string, ValueId> out;
  for (const Node& n : g.nodes) {
    if (n.op != "Linear" || n.inputs.size() < 2) continue;
    auto p = param_behind(g, n.inputs[1]);
    // A fused product's weight is its parts' rows (rlx/core/fused_weights.h): each part is a
    // checkpoint tensor of its own, and they share the activations.
    if (p && !other_use.count(*p))
      for (const std::string& part : fused_weight_parts(g.values[*p].name))
        out.emplace(part, n.inputs[0]);
  }
  return out;
}

Calibration calibrate(const Model& model, std::shared_ptr<Target> target,
                      const CalibrationOptions& o, bool quiet) {
  const Graph& source = model.graph("main");
  std::map<std::string, ValueId> layers = linear_weights(source);
  // The same graph with each layer's activations as an extra output.
  Graph g = source;
  g.outputs.clear();
  std::vector<std::pair<std::string, std::string>> watched;  // weight, output value name
  for (const auto& [weight, x] : layers) {
    // q, k and v read the same activations: one output serves the three.
    if (std::find(g.outputs.begin(), g.outputs.end(), x) == g.outputs.end()) g.outputs.push_back(x);
    watched.emplace_back(weight, g.values[x].name);
  }
  const TensorMap& file = o.inputs;
  int64_t rows = -1;
  for (ValueId v : g.inputs) {
    const std::string& name = g.values[v].name;
    auto it = file.find(name);
    if (it == file.end())
      throw CliError(fmt::format("--calibration {} has no tensor '{}'", o.source, name),
                     "write every input of the model's main graph, rows along the first axis");
    if (it->second.rank() < 1 || (rows >= 0 && it->second.shape()[0] != rows))
      throw CliError(
          fmt::format("--calibration {}: the inputs differ in their number of rows", o.source));
    rows = it->second.shape()[0];
  }
  if (rows <= 0) throw CliError(fmt::format("--calibration {} holds no rows", o.source));

  Session session(std::move(target));
  CompiledModel compiled = session.compile(g);
  const bool percentile = o.method == "percentile";
  std::map<std::string, Observed> seen;
  std::map<std::string, Gram> grams;  // by activation value: q, k and v share one
  progress::Task task("calibrating", rows);
  int64_t tokens = 0;
  for (int64_t r0 = 0; r0 < rows; r0 += o.batch) {
    const int64_t r1 = std::min(rows, r0 + o.batch);
    NamedTensors in;
    for (ValueId v : g.inputs) {
      const std::string& name = g.values[v].name;
      in.emplace(name, cli::rows(file.at(name), r0, r1 - r0));
    }
    // Columns that are padding in every row of the batch are not run: rows padded to the
    // longest of all (a text file's one long paragraph) cost that length in every batch.
    const int64_t width = real_columns(in);
    if (width > 0 && width < in.begin()->second.shape()[1])
      for (auto& [name, t] : in) t = first_columns(t, width);
    NamedTensors out = compiled.run(in);
    const std::vector<bool> keep = real_rows(in);
    // The activation rows the layers saw (tokens, for a text model): the first layer's, less
    // the padding the mask marks.
    if (!watched.empty()) {
      const Tensor& a = out.at(watched.front().second);
      const int64_t activation_rows =
          a.shape().empty() || a.shape().back() == 0 ? 0 : a.numel() / a.shape().back();
      tokens += static_cast<int64_t>(keep.size()) == activation_rows
                    ? std::count(keep.begin(), keep.end(), true)
                    : activation_rows;
    }
    for (const auto& [weight, value] : watched)
      observe(out.at(value), keep, percentile, seen[weight]);
    if (o.gram) {
      for (const std::string& value : values_of(watched))
        add_rows(out.at(value), keep, grams[value]);
    }
    task.advance(r1 - r0);
    if (!quiet)
      std::fprintf(stderr, "rlx quantize: calibration rows %lld/%lld, %zu layers observed\n",
                   static_cast<long long>(r1), static_cast<long long>(rows), watched.size());
  }
  Calibration result;
  result.rows = rows;
  result.tokens = tokens;
  for (const auto& [weight, value] : watched)
    if (auto it = grams.find(value); it != grams.end()) result.grams[weight] = it->second;
  std::map<std::string, quant::U8Params>& params = result.ranges;
  for (auto& [weight, obs] : seen) {
    result.channels[weight] = obs.channels;
    float lo = obs.lo, hi = obs.hi;
    if (percentile) {
      const double tail = (100.0 - o.percentile) / 100.0;
      lo = quantile(obs.sample, tail);
      hi = quantile(obs.sample, 1.0 - tail);
    }
    params[weight] = quant::u8_params(lo, hi);
  }
  return result;
}

}  // namespace rlx::cli
