// Pipeline stages of a decoder or bert (docs/parallel.md, "Pipeline parallelism"): stage s of P
// builds layers [s L / P, (s + 1) L / P). Stage 0 embeds the tokens; every other stage receives
// its predecessor's hidden state (Recv) instead, and every stage but the last sends its own on
// (Send). The last stage's results (a decoder's logits, bert's last hidden state) are broadcast,
// so each rank's graphs return what one process's would, and `rlx generate` chooses the same
// tokens on every rank.
//
// With tensor parallelism as well the job is stage-major: world rank = stage * T + t for the
// shard t of T, a stage's T ranks are one "block:T" communicator, and Send/Recv connect the
// shards of equal t in neighbouring stages.
#pragma once
#include <string>

#include "rlx/core/builder.h"
#include "rlx/frontends/builders.h"

namespace rlx::frontends::detail {

struct Stage {
  int64_t begin = 0, end = 0;  // the layers this stage builds
  bool first = true, last = true;
  int64_t prev = -1, next = -1;  // world ranks of the neighbouring stages' shard
  int64_t root = 0;              // world rank whose logits every rank receives
};

// The stage `c` describes (the whole model when c.pipeline_stages == 1).
Stage stage_of(const TransformerConfig& c);

// `c` as stage pp.stage of pp.stages; a user error when the model cannot be split so (fewer
// layers than stages).
TransformerConfig stage_config(const TransformerConfig& c, const PipelineParallel& pp);

// Attributes of a tensor-parallel collective: within the stage's ranks under pipeline
// parallelism, every rank of the job otherwise.
Attrs tensor_parallel_attrs(const TransformerConfig& c, Attrs attrs);

// The previous stage's hidden state f32[B, seq, hidden]; `ids` gives B and seq.
ValueId receive_hidden(GraphBuilder& b, const Stage& s, ValueId ids, int64_t hidden);
// Sends h to the next stage; the result is h, ordered after the send.
ValueId send_hidden(GraphBuilder& b, const Stage& s, ValueId h);
// The last stage's `x` on every rank (x's values are not read elsewhere: it gives the type and
// orders the broadcast after what x depends on).
ValueId broadcast_from_last(GraphBuilder& b, const Stage& s, ValueId x);
// The last stage's logits on every rank. The last stage passes its logits; the others pass
// their sent hidden state [B, S, hidden] (S the positions whose logits the graph returns), which
// gives the received logits their type and orders the broadcast after the send.
ValueId share_logits(GraphBuilder& b, const Stage& s, ValueId logits_or_sent, int64_t vocab);

// Whether weight `name` of the checkpoint belongs to another stage than `c`'s (so this stage
// rightly never reads it). `tied`: the last stage's head reads the embedding table.
bool held_by_other_stage(const TransformerConfig& c, const std::string& name, bool tied);

}  // namespace rlx::frontends::detail
