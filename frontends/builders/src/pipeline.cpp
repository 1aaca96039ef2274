#include "pipeline.h"

#include <fmt/format.h>

#include <regex>

#include "rlx/core/error.h"

namespace rlx::frontends::detail {

Stage stage_of(const TransformerConfig& c) {
  Stage s;
  const int64_t P = c.pipeline_stages, p = c.pipeline_stage, T = c.tensor_parallel;
  s.begin = p * c.layers / P;
  s.end = (p + 1) * c.layers / P;
  s.first = p == 0;
  s.last = p == P - 1;
  const int64_t rank = p * T + c.tensor_parallel_rank;
  s.prev = s.first ? -1 : rank - T;
  s.next = s.last ? -1 : rank + T;
  s.root = (P - 1) * T;
  return s;
}

TransformerConfig stage_config(const TransformerConfig& c, const PipelineParallel& pp) {
  auto refuse = [&](const std::string& why) {
    throw_user_error(fmt::format("--pp {}: {} ({})", pp.stages, why, c.source));
  };
  if (pp.stages < 1 || pp.stage < 0 || pp.stage >= pp.stages)
    refuse(fmt::format("stage {} is not one of {} stages", pp.stage, pp.stages));
  if (c.layers < pp.stages)
    refuse(fmt::format("the model has {} layers, fewer than the stages", c.layers));
  TransformerConfig s = c;
  s.pipeline_stages = pp.stages;
  s.pipeline_stage = pp.stage;
  return s;
}

Attrs tensor_parallel_attrs(const TransformerConfig& c, Attrs attrs) {
  if (c.pipeline_stages > 1) attrs["comm"] = fmt::format("block:{}", c.tensor_parallel);
  return attrs;
}

ValueId receive_hidden(GraphBuilder& b, const Stage& s, ValueId ids, int64_t hidden) {
  // Recv reads only its operand's type: [B, S] ids widened to [B, S, hidden].
  const Shape& bs = b.type(ids).shape;
  ValueId like = b.broadcast_in_dim(b.convert(ids, DType::kF32), {bs[0], bs[1], Dim(hidden)},
                                    {0, 1});
  return b.op("Recv", {like}, {{"peer", s.prev}});
}

ValueId send_hidden(GraphBuilder& b, const Stage& s, ValueId h) {
  if (b.type(h).dtype != DType::kF32)
    throw_internal_error(fmt::format("a pipeline stage sends f32 hidden states, got {}",
                                     b.type(h).str()));
  return b.op("Send", {h}, {{"peer", s.next}});
}

ValueId broadcast_from_last(GraphBuilder& b, const Stage& s, ValueId x) {
  return b.op("Broadcast", {x}, {{"root", s.root}});
}

ValueId share_logits(GraphBuilder& b, const Stage& s, ValueId logits_or_sent, int64_t vocab) {
  ValueId x = logits_or_sent;
  if (!s.last) {
    // Broadcast overwrites a receiving rank's operand: any [B, S, vocab] f32 derived from the
    // sent state will do.
    const Shape& shape = b.type(x).shape;
    ValueId row = b.reduce(x, {2}, ReduceKind::kMax);
    x = b.broadcast_in_dim(row, {shape[0], shape[1], Dim(vocab)}, {0, 1});
  }
  return broadcast_from_last(b, s, x);
}

bool held_by_other_stage(const TransformerConfig& c, const std::string& name, bool tied) {
  if (c.pipeline_stages == 1) return false;
  const Stage s = stage_of(c);
  // Decoders' "model.layers.N." and bert's "[bert.]encoder.layer.N.".
  static const std::regex kLayer(R"((model\.layers|(bert\.)?encoder\.layer)\.(\d+)\..*)");
  static const std::regex kBertEmbeddings(R"((bert\.)?embeddings\..*)");
  std::smatch m;
  if (std::regex_match(name, m, kLayer)) {
    const int64_t layer = std::stoll(m[3].str());
    return layer < s.begin || layer >= s.end;
  }
  if (std::regex_match(name, kBertEmbeddings)) return !s.first;
  if (name == "model.embed_tokens.weight") return !s.first && !(s.last && tied);
  if (name == "model.norm.weight" || name == "lm_head.weight") return !s.last;
  return false;
}

}  // namespace rlx::frontends::detail
