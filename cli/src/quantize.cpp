// `rlx quantize MODEL --scheme int8-dynamic|int8|int4-weight -o OUT`: post-training quantization
// of a Hugging Face folder's Linear weights into a new folder that every rlx command loads like
// the original (the safetensors importer reads the layout: frontends/safetensors/src/
// quantized_weights.h). Embeddings, norms and biases stay as they are.
#include "rlx/core/quantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <set>

#include "commands.h"
#include "errors.h"
#include "json_out.h"
#include "model.h"
#include "options.h"
#include "quantize_calibration.h"
#include "rlx/core/half.h"
#include "rlx/core/progress.h"
#include "rlx/core/safetensors.h"
#include "rlx/llm/embedding.h"
#include "text_input.h"

namespace rlx::cli {
namespace {

namespace fs = std::filesystem;

struct QuantizeOptions {
  std::string model, scheme, output, method = "minmax";
  std::optional<std::string> calibration;
  int64_t group = 32;
  std::optional<double> percentile;
  std::optional<double> smooth;
  std::string target = "cpu";
  bool json = false;
};

bool in_percent(double v) {
  return v > 50 && v <= 100;
}
bool in_unit(double v) {
  return v >= 0 && v <= 1;
}

void declare_quantize_options(CLI::App& app, QuantizeOptions& o) {
  add_model_argument(app, o.model);
  add_value(app, "--scheme", "S", o.scheme,
            "int8-dynamic (weights int8 per output channel, activations rounded to u8 per row at "
            "run time), int8 (the same with activation ranges from --calibration) or int4-weight "
            "(weights int4 in groups of --group, activations f32)",
            Presence::kRequired);
  add_value(app, "-o,--output", "DIR", o.output, "the folder to write (created; must not exist)",
            Presence::kRequired);
  add_value(app, "--calibration", "IN.safetensors|TEXT.txt", o.calibration,
            "the model's inputs (rows along the first axis), or for an encoder with a tokenizer a "
            "text file of one sentence per line: int8's activation ranges, or the activations "
            "int4-weight rounds for (GPTQ)");
  add_value(app, "--method", "M", o.method,
            "calibration ranges: minmax (every value seen) or percentile (see --percentile)");
  add_number(app, "--percentile", "P", in_percent, "(50, 100]", o.percentile,
             "percentile: the share of values the range keeps, in percent (default 99.99)");
  add_integer(app, "--group", "G", 32, o.group, "int4-weight: weights per group, 32, 64 or 128");
  add_number(app, "--smooth", "ALPHA", in_unit, "[0, 1]", o.smooth,
             "int8: SmoothQuant's migration strength, moving activation outliers into the "
             "weights (default 0.75 with --method minmax; 0 turns it off)");
  add_target_option(app, o.target, "calibrate on");
  add_flag(app, "--json", o.json, "print what was written as one JSON object");
}

// int8 static's default migration strength: on all-MiniLM-L6-v2 (18 calibration sentences) the
// worst embedding cosine was 0.960 / 0.986 / 0.990 / 0.992 / 0.989 / 0.974 at alpha 0.5 / 0.6 /
// 0.7 / 0.75 / 0.8 / 0.85, against 0.970 unsmoothed (decision 68).
constexpr double kSmoothAlpha = 0.75;

// SmoothQuant (Xiao et al., 2022) on one layer: input channel j of the activations is
// multiplied by f_j = max|W[:, j]|^(1 - alpha) / max|X_j|^alpha and W's column j by 1 / f_j, so
// X W^T is unchanged while the activations' outlier channels shrink into a range one u8 scale
// can hold and the weights, quantized per row, take them. Returns f (1 where either is zero).
std::vector<float> smooth(std::vector<float>& w, int64_t n, int64_t k, const ChannelRanges& x,
                          double alpha) {
  std::vector<float> f(static_cast<size_t>(k), 1.0f);
  for (int64_t j = 0; j < k; ++j) {
    float wmax = 0;
    for (int64_t r = 0; r < n; ++r) wmax = std::max(wmax, std::fabs(w[r * k + j]));
    const float xmax = std::max(std::fabs(x.lo[j]), std::fabs(x.hi[j]));
    if (wmax > 0 && xmax > 0)
      f[j] = static_cast<float>(std::pow(wmax, 1 - alpha) / std::pow(xmax, alpha));
    for (int64_t r = 0; r < n; ++r) w[r * k + j] /= f[j];
  }
  return f;
}

// A weight as f32, from the float dtypes checkpoints use.
std::vector<float> as_f32(const std::string& name, const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  switch (t.dtype()) {
    case DType::kF32:
      std::copy(t.as<float>(), t.as<float>() + t.numel(), out.begin());
      break;
    case DType::kF16:
      for (int64_t i = 0; i < t.numel(); ++i) out[i] = f16_to_f32(t.as<uint16_t>()[i]);
      break;
    case DType::kBF16:
      for (int64_t i = 0; i < t.numel(); ++i) out[i] = bf16_to_f32(t.as<uint16_t>()[i]);
      break;
    default:
      throw CliError(fmt::format("weight '{}' is {}; rlx quantize reads f32, f16 and bf16",
                                 name, dtype_name(t.dtype())));
  }
  return out;
}

// Everything of the folder but its weights, which the quantized file replaces.
void copy_other_files(const fs::path& from, const fs::path& to) {
  for (const auto& e : fs::recursive_directory_iterator(from)) {
    const fs::path rel = fs::relative(e.path(), from);
    const std::string ext = e.path().extension().string();
    if (e.is_directory()) {
      fs::create_directories(to / rel);
      continue;
    }
    // Weights in other formats would disagree with the quantized ones.
    if (ext == ".safetensors" || ext == ".bin" || ext == ".onnx" || ext == ".h5" ||
        ext == ".msgpack" || ext == ".ot" || e.path().filename() == "model.safetensors.index.json")
      continue;
    fs::copy_file(e.path(), to / rel);
  }
}

// Whether the file at `path` starts like safetensors: an 8-byte header length, then the JSON
// header's '{'. Text does not (its ninth byte would have to be '{').
bool looks_like_safetensors(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char head[9] = {};
  return f.read(head, sizeof head) && head[8] == '{';
}

// The calibration rows: a safetensors file of the model's inputs, or sentences (any other
// file: one a line) tokenized as `rlx embed --text-file` does, which needs an encoder with a
// tokenizer.
TensorMap calibration_inputs(const Model& model, const std::string& path,
                             const fs::path& model_path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || looks_like_safetensors(path)) return read_safetensors(path);
  std::vector<std::string> sentences = read_lines(path, "--calibration");
  if (std::string problem = llm::encoder_problem(model); !problem.empty())
    throw CliError(fmt::format("--calibration {} is text, which rlx tokenizes for encoders only, "
                               "and {} is not one: {}",
                               path, model_path.string(), problem),
                   "write the model's inputs to a safetensors file instead, rows along the "
                   "first axis");
  Tokenizer tokenizer = model_tokenizer(model, "calibration", "--calibration IN.safetensors");
  // Sentences of similar length side by side, so that each calibration batch is only as wide as
  // its longest (calibrate() runs a batch without its all-padding columns); the statistics do
  // not depend on the order.
  std::stable_sort(sentences.begin(), sentences.end(),
                   [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
  return llm::sentence_batch(tokenizer, sentences, llm::encoder_row_limit(model));
}

int quantize_main(const QuantizeOptions& o, const GlobalOptions& global) {
  const fs::path model_path = o.model, out = o.output;
  const bool int8 = o.scheme == "int8" || o.scheme == "int8-dynamic";
  if (!int8 && o.scheme != "int4-weight")
    throw UsageError(fmt::format("--scheme {} is not one of int8-dynamic, int8, int4-weight",
                                 o.scheme));
  if (o.scheme == "int8" && !o.calibration)
    throw UsageError("--scheme int8 calibrates its activation ranges: give --calibration "
                     "IN.safetensors (or use --scheme int8-dynamic, which needs none)");
  if (o.scheme == "int8-dynamic" && o.calibration)
    throw UsageError("--scheme int8-dynamic needs no calibration; drop --calibration");
  if (o.smooth && o.scheme != "int8")
    throw UsageError(
        "--smooth shifts int8's calibrated activation ranges into the weights; "
        "it needs --scheme int8 and --calibration");
  if (o.smooth && *o.smooth > 0 && o.method != "minmax")
    throw UsageError(
        "--smooth takes each input channel's extremes, which --method percentile "
        "leaves out: use --method minmax (the default) or --smooth 0");
  if (o.scheme == "int4-weight" && (o.method != "minmax" || o.percentile))
    throw UsageError("--method and --percentile choose int8's activation ranges; int4-weight's "
                     "--calibration rounds the weights by GPTQ, which takes neither");
  if (o.method != "minmax" && o.method != "percentile")
    throw UsageError(fmt::format("--method {} is not one of minmax, percentile", o.method));
  if (o.group != 32 && o.group != 64 && o.group != 128)
    throw UsageError(fmt::format("--group {} is not one of 32, 64, 128", o.group));
  std::error_code ec;
  if (!fs::is_directory(model_path, ec) || !fs::exists(model_path / "model.safetensors", ec))
    throw CliError(fmt::format("{} is not a Hugging Face folder with a model.safetensors",
                               model_path.string()),
                   "rlx quantize reads a folder holding config.json and model.safetensors");
  if (fs::exists(out, ec))
    throw CliError(fmt::format("--output {} exists", out.string()),
                   "name a folder that does not exist yet; rlx quantize creates it");

  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  Model model = load_model(reg, model_path);
  std::set<std::string> linear;
  for (const auto& [name, g] : model.graphs)
    for (const auto& [weight, x] : linear_weights(g)) linear.insert(weight);
  if (linear.empty())
    throw CliError(fmt::format("{} has no Linear layer with a weight to quantize",
                               model_path.string()));

  Calibration calibrated;
  if (o.calibration) {
    std::shared_ptr<Target> target = choose_target(reg, o.target);
    require_can_execute(*target, target->name(), model_path.string());
    CalibrationOptions c;
    c.source = *o.calibration;
    c.inputs = calibration_inputs(model, *o.calibration, model_path);
    c.method = o.method;
    if (o.percentile) c.percentile = *o.percentile;
    c.gram = !int8;
    calibrated = calibrate(model, target, c, global.quiet);
  }
  const std::map<std::string, quant::U8Params>& ranges = calibrated.ranges;

  TensorMap in = map_safetensors(model_path / "model.safetensors");
  TensorMap written;
  int64_t quantized = 0, bytes_before = 0, bytes_after = 0, by_gptq = 0, smoothed_layers = 0;
  std::vector<std::string> few_tokens;  // int4 layers left to plain rounding despite calibration
  // GPTQ takes seconds a layer (a Cholesky factor and k column updates of the whole weight).
  progress::Task task("rounding the weights", static_cast<int64_t>(linear.size()));
  for (const auto& [name, t] : in) {
    bytes_before += static_cast<int64_t>(t.nbytes());
    const bool take = linear.count(name) && t.rank() == 2 && (!int8 || o.scheme != "int8" ||
                                                               ranges.count(name));
    if (!take || (!int8 && t.shape()[1] % o.group)) {
      written[name] = t;
      continue;
    }
    const int64_t n = t.shape()[0], k = t.shape()[1];
    const std::vector<float> w = as_f32(name, t);
    if (int8) {
      std::vector<float> smoothed = w;
      std::optional<quant::U8Params> range;
      std::vector<float> factor;  // x * factor is what range describes
      if (auto r = ranges.find(name); r != ranges.end()) range = r->second;
      auto ch = calibrated.channels.find(name);
      const double alpha = o.smooth ? *o.smooth : (o.method == "minmax" ? kSmoothAlpha : 0.0);
      if (range && alpha > 0 && ch != calibrated.channels.end() &&
          static_cast<int64_t>(ch->second.lo.size()) == k) {
        factor = smooth(smoothed, n, k, ch->second, alpha);
        float lo = 0, hi = 0;
        for (int64_t j = 0; j < k; ++j)
          lo = std::min(lo, ch->second.lo[j] * factor[j]),
          hi = std::max(hi, ch->second.hi[j] * factor[j]);
        range = quant::u8_params(lo, hi);
        ++smoothed_layers;
      }
      Tensor q(DType::kI8, {n, k}), s(DType::kF32, {n});
      quant::quantize_int8_rows(smoothed.data(), n, k, q.as<int8_t>(), s.as<float>());
      written[name] = q;
      written[name + "_scale"] = s;
      if (range) {
        const std::string base = name.substr(0, name.size() - std::string(".weight").size());
        written[base + ".input_scale"] =
            Tensor::from(DType::kF32, {1}, std::vector<float>{range->scale});
        written[base + ".input_zero_point"] =
            Tensor::from(DType::kU8, {1}, std::vector<uint8_t>{range->zero});
        if (!factor.empty())
          written[base + ".input_smooth"] = Tensor::from(DType::kF32, {k}, factor);
      }
    } else {
      Tensor q(DType::kU8, {n, k / 2}), s(DType::kF32, {n, k / o.group}), z(DType::kU8, {n, k / o.group});
      // GPTQ only where the calibration tokens span the layer's inputs: with fewer tokens than
      // inputs it moves rounding errors into directions the data never showed (qwen3-tiny on its
      // 48 prompt tokens, 128 inputs a layer: greedy agreement 67% -> 47%); those layers round
      // to the nearest level, and the record says how many.
      auto gram = calibrated.grams.find(name);
      if (gram != calibrated.grams.end() && gram->second.k == k && gram->second.rows >= k) {
        quant::quantize_int4_groups_gptq(w.data(), n, k, o.group, gram->second.xtx->data(),
                                         q.as<uint8_t>(), s.as<float>(), z.as<uint8_t>());
        ++by_gptq;
      } else {
        quant::quantize_int4_groups(w.data(), n, k, o.group, q.as<uint8_t>(), s.as<float>(),
                                    z.as<uint8_t>());
        if (o.calibration) few_tokens.push_back(name);
      }
      written[name] = q;
      written[name + "_scale"] = s;
      written[name + "_zero_point"] = z;
    }
    ++quantized;
    task.advance();
  }
  for (const auto& [name, t] : written) bytes_after += static_cast<int64_t>(t.nbytes());

  if (!few_tokens.empty() && !global.quiet)
    std::fprintf(stderr,
                 "rlx quantize: %zu of %lld layers rounded to the nearest level, not by GPTQ: the "
                 "calibration's %lld tokens are fewer than they have inputs (%s%s); give more "
                 "rows\n",
                 few_tokens.size(), static_cast<long long>(quantized),
                 static_cast<long long>(calibrated.tokens), few_tokens[0].c_str(),
                 few_tokens.size() > 1 ? ", ..." : "");
  fs::create_directories(out);
  copy_other_files(model_path, out);
  std::map<std::string, std::string> meta = {{"rlx.quantization", o.scheme}};
  if (!int8) meta["rlx.group"] = std::to_string(o.group);
  if (o.calibration) meta["rlx.calibration"] = int8 ? o.method : "gptq";
  write_safetensors(out / "model.safetensors", written, meta);

  if (o.json) {
    json::Object j{{"model", jstring(model_path.string())},
                   {"output", jstring(out.string())},
                   {"scheme", jstring(o.scheme)},
                   {"weights_quantized", jint(quantized)},
                   {"bytes_before", jint(bytes_before)},
                   {"bytes_after", jint(bytes_after)}};
    if (!int8) j.push_back({"group", jint(o.group)});
    if (o.calibration) {
      j.push_back({"calibration", jstring(*o.calibration)});
      j.push_back({"calibration_rows", jint(calibrated.rows)});
      j.push_back({"calibration_tokens", jint(calibrated.tokens)});
      j.push_back({"method", jstring(int8 ? o.method : "gptq")});
    }
    if (o.calibration && int8) j.push_back({"smoothed_layers", jint(smoothed_layers)});
    if (o.calibration && !int8) {
      j.push_back({"gptq_layers", jint(by_gptq)});
      json::Array nearest;
      for (const std::string& name : few_tokens) nearest.push_back(jstring(name));
      j.push_back({"nearest_layers", json::Value{std::move(nearest)}});
    }
    std::fputs((to_json_text(json::Value{std::move(j)}) + "\n").c_str(), stdout);
  } else {
    std::printf("wrote %s: %s, %lld Linear weights quantized, weights %.1f MB -> %.1f MB\n",
                out.string().c_str(), o.scheme.c_str(), static_cast<long long>(quantized),
                bytes_before / 1e6, bytes_after / 1e6);
  }
  return 0;
}

}  // namespace

Command quantize_command() {
  return make_command<QuantizeOptions>(
      {"quantize", "quantize a model's Linear weights to int8 or int4 (post-training)",
       "MODEL --scheme int8-dynamic|int8|int4-weight [--calibration IN.safetensors|TEXT.txt] "
       "[--method minmax|percentile] [--smooth ALPHA] [--group G] -o OUT [--json]",
       "Reads MODEL, a Hugging Face folder (config.json, model.safetensors), and writes OUT, the\n"
       "same folder with each Linear layer's weight quantized; every rlx command loads OUT like\n"
       "any model, and `rlx explain OUT` shows each quantized product (QMatMul: the int8 GEMM;\n"
       "DequantMatMul i4_gG: int4 weights decoded as they are packed for the f32 GEMM).\n"
       "  int8-dynamic  weights int8 per output channel (symmetric), activations rounded to u8\n"
       "                per row at run time; no calibration\n"
       "  int8          the same with one u8 range per layer for the activations, from running\n"
       "                the f32 model on --calibration (its inputs, rows along the first axis;\n"
       "                or sentences, one a line, for encoders with a tokenizer; progress on\n"
       "                stderr); --method minmax or percentile; with minmax each\n"
       "                layer's activation outliers move into its weights (SmoothQuant,\n"
       "                --smooth ALPHA, default 0.75: P.input_smooth scales x first)\n"
       "  int4-weight   weights int4 in groups of --group (32, 64, 128) with a scale and zero\n"
       "                point each; activations stay f32; calibration optional: with\n"
       "                --calibration each layer is rounded by GPTQ for the activations it\n"
       "                multiplies (X W^T kept close, not W), else to the nearest level\n"
       "Embeddings, norms and biases are kept as they are."},
      &declare_quantize_options, &quantize_main);
}

}  // namespace rlx::cli
