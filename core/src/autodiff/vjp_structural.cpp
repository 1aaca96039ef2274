// Vector-Jacobian rules of the shape, indexing, reduction and contraction primitives. Most are
// the adjoint index map: a broadcast's cotangent is a sum, a slice's is a zero pad, a gather's is
// a scatter-add, and a contraction's is two contractions with the result's free dims.
#include <algorithm>

#include "autodiff/vjp_util.h"

namespace rlx::autodiff {

namespace {

using Ins = std::vector<ValueId>;

ValueId zero_scalar(GraphBuilder& b, DType d) { return b.scalar(d, 0.0); }

ValueId pad(GraphBuilder& b, ValueId x, IntList low, IntList high) {
  if (std::all_of(low.begin(), low.end(), [](int64_t v) { return v == 0; }) &&
      std::all_of(high.begin(), high.end(), [](int64_t v) { return v == 0; }))
    return x;
  return b.op("pad", {x, zero_scalar(b, b.type(x).dtype)}, {{"low", low}, {"high", high}});
}

// The slice [start, limit) of dim d, every other dim whole.
ValueId slice_dim(GraphBuilder& b, ValueId x, size_t d, int64_t start, int64_t limit) {
  size_t rank = b.type(x).shape.size();
  IntList lo(rank, 0), hi(rank, -1);
  lo[d] = start;
  hi[d] = limit;
  return b.slice(x, lo, hi);
}

ValueId broadcast_rule_one(GraphBuilder& b, const Node& n, ValueId x, ValueId g) {
  const Shape in = b.type(x).shape;
  const Shape out = b.type(g).shape;
  const IntList& dims = n.attr_ints("dims");
  std::vector<bool> kept(out.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    bool stretched = in[i].is_static() && in[i].value == 1 && !(out[dims[i]].is_static() && out[dims[i]].value == 1);
    if (!stretched) kept[dims[i]] = true;
  }
  IntList axes;
  for (size_t d = 0; d < out.size(); ++d)
    if (!kept[d]) axes.push_back(static_cast<int64_t>(d));
  ValueId s = axes.empty() ? g : b.reduce(g, axes, ReduceKind::kSum);
  return b.reshape(s, in);
}

// The zero-filled operand a slice was taken from, with g where the slice's elements were.
ValueId unslice(GraphBuilder& b, const Node& n, ValueId x, ValueId g) {
  const Shape in = b.type(x).shape;
  const IntList& start = n.attr_ints("start");
  const IntList& limit = n.attr_ints("limit");
  IntList strides = n.has_attr("strides") ? n.attr_ints("strides") : IntList(start.size(), 1);
  for (size_t d = 0; d < in.size(); ++d) {
    if (start[d] == 0 && limit[d] == -1 && strides[d] == 1) continue;
    if (strides[d] > 1) {
      // Put stride-1 zeros after each element: [.., n, ..] -> [.., n, s, ..] -> [.., n*s, ..],
      // then keep the first limit - start.
      Shape s = b.type(g).shape;
      int64_t len = s[d].value;
      Shape split = s;
      split.insert(split.begin() + static_cast<int64_t>(d) + 1, Dim(1));
      ValueId e = b.reshape(g, split);
      IntList lo(split.size(), 0), hi(split.size(), 0);
      hi[d + 1] = strides[d] - 1;
      e = pad(b, e, lo, hi);
      Shape merged = s;
      merged[d] = len * strides[d];
      e = b.reshape(e, merged);
      g = slice_dim(b, e, d, 0, limit[d] - start[d]);
    }
    IntList lo(in.size(), 0), hi(in.size(), 0);
    lo[d] = start[d];
    hi[d] = in[d].value - limit[d];
    g = pad(b, g, lo, hi);
  }
  return g;
}

// dot_general: result dims are [batch, lhs free, rhs free]. The cotangent of one side contracts
// g's other-side free dims with the other operand, which gives [batch, own free, own contracted
// (ordered as the other operand's dims)]; a transpose puts them back in the operand's order.
ValueId dot_side(GraphBuilder& b, ValueId g, ValueId other, const IntList& own_batch,
                 const IntList& own_contract, int64_t own_rank, const IntList& other_batch,
                 const IntList& other_contract, int64_t other_rank, int64_t g_other_free_at) {
  int64_t nb = static_cast<int64_t>(own_batch.size());
  IntList own_free, other_free;
  for (int64_t d = 0; d < own_rank; ++d)
    if (std::find(own_batch.begin(), own_batch.end(), d) == own_batch.end() &&
        std::find(own_contract.begin(), own_contract.end(), d) == own_contract.end())
      own_free.push_back(d);
  for (int64_t d = 0; d < other_rank; ++d)
    if (std::find(other_batch.begin(), other_batch.end(), d) == other_batch.end() &&
        std::find(other_contract.begin(), other_contract.end(), d) == other_contract.end())
      other_free.push_back(d);
  IntList g_batch, g_contract;
  for (int64_t i = 0; i < nb; ++i) g_batch.push_back(i);
  for (size_t i = 0; i < other_free.size(); ++i) g_contract.push_back(g_other_free_at + static_cast<int64_t>(i));
  // dot_general(g, other): [batch (own_batch order), own free (g order = own_free ascending),
  // other's remaining dims = other_contract sorted ascending, each paired with own_contract];
  // dot_general(other, g) has the same dims with the last two groups swapped.
  auto perm_for = [&](bool other_first) {
    IntList perm(own_rank, -1);
    const auto free_g = static_cast<int64_t>(own_free.size());
    const auto contracted = static_cast<int64_t>(own_contract.size());
    for (int64_t i = 0; i < nb; ++i) perm[own_batch[i]] = i;
    for (int64_t j = 0; j < free_g; ++j)
      perm[own_free[j]] = nb + j + (other_first ? contracted : 0);
    IntList sorted = other_contract;
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 0; k < own_contract.size(); ++k) {
      auto at = std::find(sorted.begin(), sorted.end(), other_contract[k]) - sorted.begin();
      perm[own_contract[k]] = nb + at + (other_first ? 0 : free_g);
    }
    return perm;
  };
  auto identity = [](const IntList& perm) {
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return false;
    return true;
  };
  // The order that needs no transpose, when one does: a weight kept as W^T (x W^T's rhs as
  // [in, out]) gets its gradient as x^T g straight into its own layout.
  const IntList g_first = perm_for(false), other_first = perm_for(true);
  if (!identity(g_first) && identity(other_first))
    return b.dot_general(other, g, other_batch, g_batch, other_free, g_contract);
  return transpose_if_needed(
      b, b.dot_general(g, other, g_batch, other_batch, g_contract, other_free), g_first);
}

void shape_rules(Rules& r) {
  r["broadcast_in_dim"] = [](GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) -> Ins {
    return {broadcast_rule_one(b, n, in[0], ct[0])};
  };
  r["reshape"] = [](GraphBuilder& b, const Node&, const Ins& in, const Ins& ct) -> Ins {
    return {b.reshape(ct[0], b.type(in[0]).shape)};
  };
  r["transpose"] = [](GraphBuilder& b, const Node& n, const Ins&, const Ins& ct) -> Ins {
    const IntList& perm = n.attr_ints("perm");
    IntList inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
    return {transpose_if_needed(b, ct[0], inverse)};
  };
  r["slice"] = [](GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) -> Ins {
    return {unslice(b, n, in[0], ct[0])};
  };
  r["concat"] = [](GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) -> Ins {
    int64_t rank = b.type(in[0]).rank();
    int64_t axis = n.attr_int("axis");
    if (axis < 0) axis += rank;
    Ins out;
    int64_t at = 0;
    for (ValueId x : in) {
      int64_t len = b.type(x).shape[axis].value;
      out.push_back(slice_dim(b, ct[0], static_cast<size_t>(axis), at, at + len));
      at += len;
    }
    return out;
  };
  r["pad"] = [](GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) -> Ins {
    const Shape s = b.type(in[0]).shape;
    const IntList& low = n.attr_ints("low");
    IntList start(s.size()), limit(s.size());
    for (size_t d = 0; d < s.size(); ++d) {
      bool whole = low[d] == 0 && n.attr_ints("high")[d] == 0;
      start[d] = whole ? 0 : low[d];
      limit[d] = whole ? -1 : low[d] + s[d].value;
    }
    ValueId gx = b.slice(ct[0], start, limit);
    IntList all_g(s.size()), all_x(s.size());
    for (size_t d = 0; d < s.size(); ++d) all_g[d] = all_x[d] = static_cast<int64_t>(d);
    ValueId total = s.empty() ? ct[0] : b.reduce(ct[0], all_g, ReduceKind::kSum);
    ValueId inner = s.empty() ? gx : b.reduce(gx, all_x, ReduceKind::kSum);
    return {gx, b.sub(total, inner)};
  };
}

void indexing_rules(Rules& r) {
  r["gather"] = [](GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) -> Ins {
    ValueId zeros = fill(b, in[0], 0.0);
    return {b.op("scatter", {zeros, in[1], ct[0]}, {{"axis", n.attr_int("axis")}, {"reduce", std::string("add")}}),
            kNoValue};
  };
  r["scatter"] = [](GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) -> Ins {
    int64_t axis = n.attr_int("axis");
    ValueId g_updates = b.op("gather", {ct[0], in[1]}, {{"axis", axis}});
    if (n.attr_string("reduce", "none") == "add") return {ct[0], kNoValue, g_updates};
    // Written positions lose what the operand held there (indices assumed distinct).
    ValueId g_operand = b.op("scatter", {ct[0], in[1], fill(b, in[2], 0.0)},
                             {{"axis", axis}, {"reduce", std::string("none")}});
    return {g_operand, kNoValue, g_updates};
  };
}

// The reduced result (or its cotangent) broadcast back over the reduced axes.
ValueId unreduce(GraphBuilder& b, const Node& n, ValueId x, ValueId reduced) {
  int64_t rank = b.type(x).rank();
  std::vector<bool> drop(rank, false);
  for (int64_t a : n.attr_ints("axes")) drop[a < 0 ? a + rank : a] = true;
  IntList dims;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[i]) dims.push_back(i);
  return b.broadcast_in_dim(reduced, b.type(x).shape, dims);
}

void reduction_rules(Rules& r) {
  r["reduce_sum"] = [](GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) -> Ins {
    return {unreduce(b, n, in[0], ct[0])};
  };
  // Ties share the cotangent evenly.
  auto extremum = [](GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) -> Ins {
    ValueId hit = mask(b, b.binary("eq", in[0], unreduce(b, n, in[0], n.outputs[0])), in[0]);
    ValueId count = b.reduce(hit, n.attr_ints("axes"), ReduceKind::kSum);
    ValueId share = b.div(ct[0], count);
    return {b.mul(hit, unreduce(b, n, in[0], share))};
  };
  r["reduce_max"] = extremum;
  r["reduce_min"] = extremum;
  // prod / x: exact away from zeros (a zero element makes the others' cotangent 0/0).
  r["reduce_prod"] = [](GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) -> Ins {
    return {b.div(unreduce(b, n, in[0], b.mul(ct[0], conj_if_complex(b, n.outputs[0]))),
                  conj_if_complex(b, in[0]))};
  };
  r["dot_general"] = [](GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) -> Ins {
    const IntList &lb = n.attr_ints("lhs_batch"), &rb = n.attr_ints("rhs_batch");
    const IntList &lc = n.attr_ints("lhs_contract"), &rc = n.attr_ints("rhs_contract");
    int64_t lr = b.type(in[0]).rank(), rr = b.type(in[1]).rank();
    int64_t nb = static_cast<int64_t>(lb.size());
    int64_t lhs_free = lr - nb - static_cast<int64_t>(lc.size());
    // d lhs: contract g's rhs-free dims (after batch and lhs free) with rhs's free dims.
    ValueId ga = dot_side(b, ct[0], conj_if_complex(b, in[1]), lb, lc, lr, rb, rc, rr, nb + lhs_free);
    // d rhs: contract g's lhs-free dims (right after batch) with lhs's free dims.
    ValueId gb = dot_side(b, ct[0], conj_if_complex(b, in[0]), rb, rc, rr, lb, lc, lr, nb);
    return {ga, gb};
  };
}

}  // namespace

ValueId transpose_if_needed(GraphBuilder& b, ValueId x, const IntList& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return b.transpose(x, perm);
  return x;
}

void structural_rules(Rules& r) {
  shape_rules(r);
  indexing_rules(r);
  reduction_rules(r);
}

}  // namespace rlx::autodiff
