#include "rlx/core/mlp.h"

#include <fmt/format.h>

#include <cmath>
#include <random>

#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/losses.h"

namespace rlx {

Graph mlp_classifier(const std::vector<int64_t>& sizes, uint64_t seed, bool with_loss) {
  if (sizes.size() < 2) throw_user_error("mlp: needs at least an input and an output size");
  Graph g;
  g.name = "mlp";
  GraphBuilder b(g);
  Dim batch = Dim::symbol("batch");
  ValueId h = b.input("x", {DType::kF32, {batch, sizes[0]}});
  // Uniform draws from the top 24 bits of mt19937: the same numbers on every platform (the
  // standard library's distributions are not specified bit for bit).
  std::mt19937 rng(static_cast<uint32_t>(seed));
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    int64_t in = sizes[i], out = sizes[i + 1];
    Tensor w(DType::kF32, {out, in});
    float scale = std::sqrt(2.0f / static_cast<float>(in));
    for (int64_t k = 0; k < w.numel(); ++k)
      w.as<float>()[k] = (static_cast<float>(rng() >> 8) * (2.0f / 16777216.0f) - 1.0f) * scale;
    ValueId wv = b.param(fmt::format("fc{}.weight", i), w);
    ValueId bv = b.param(fmt::format("fc{}.bias", i), Tensor(DType::kF32, {out}));
    h = b.op("Linear", {h, wv, bv});
    if (i + 2 < sizes.size()) h = b.op("Relu", {h});
  }
  if (!with_loss) {
    g.values[h].name = "logits";
    b.output(h);
    return g;
  }
  ValueId labels = b.input("labels", {DType::kI32, {batch}});
  ValueId loss = softmax_cross_entropy(b, h, labels);
  g.values[loss].name = "loss";
  b.output(loss);
  return g;
}

std::vector<int64_t> parse_mlp_spec(const std::string& text) {
  const std::string usage = "write it as mlp:IN,HIDDEN...,OUT (e.g. mlp:784,128,10)";
  if (text.rfind("mlp:", 0) != 0) throw_user_error(fmt::format("model '{}' is not an MLP; {}", text, usage));
  std::vector<int64_t> sizes;
  size_t at = 4;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v <= 0)
      throw_user_error(fmt::format("model '{}': '{}' is not a positive layer size; {}", text, item, usage));
    sizes.push_back(v);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (sizes.size() < 2) throw_user_error(fmt::format("model '{}' needs at least two sizes; {}", text, usage));
  return sizes;
}

}  // namespace rlx
