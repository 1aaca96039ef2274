// Losses built from MIR primitives, so autodiff differentiates them like any other graph. Each
// returns a scalar: the mean over the batch (every element for the elementwise losses).
#pragma once
#include "rlx/core/builder.h"

namespace rlx {

// logits [N, C] (float), labels [N] (i32 or i64, each in [0, C)): mean of logsumexp(logits_i)
// - logits_i[label_i], as the HIR op SoftmaxCrossEntropy (its backward SoftmaxCrossEntropyBackward).
// A label out of range is a run-time error where the op runs natively (cpu); through the
// decomposition its row matches no class (rlx train checks labels when it reads them).
ValueId softmax_cross_entropy(GraphBuilder& b, ValueId logits, ValueId labels);
// mean((prediction - target)^2)
ValueId mean_squared_error(GraphBuilder& b, ValueId prediction, ValueId target);
// Binary cross-entropy of targets in [0, 1]. From logits (stable: max(z, 0) - z t +
// log(1 + exp(-|z|))), or from probabilities p: -(t log p + (1 - t) log(1 - p)).
ValueId binary_cross_entropy(GraphBuilder& b, ValueId input, ValueId target, bool from_logits);

}  // namespace rlx
