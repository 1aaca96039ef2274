#include "loop_kernel.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <vector>

#include "rlx/core/error.h"
#include "rlx/core/scalar_eval.h"

namespace rlx::cpu {

namespace {

constexpr int kBlock = 256;
constexpr size_t kSlotBytes = kBlock * 8;
// Work per task (points) before TBB splits further; keeps tiny kernels on one thread.
constexpr int64_t kGrainPoints = 1 << 14;

template <typename T>
T* slot(unsigned char* slots, int32_t e) {
  return reinterpret_cast<T*>(slots + static_cast<size_t>(e) * kSlotBytes);
}

}  // namespace

Op op_from_name(const std::string& n) {
  static const std::pair<const char*, Op> kOps[] = {
      {"neg", Op::kNeg}, {"abs", Op::kAbs}, {"sign", Op::kSign}, {"exp", Op::kExp},
      {"log", Op::kLog}, {"sqrt", Op::kSqrt}, {"rsqrt", Op::kRsqrt}, {"tanh", Op::kTanh},
      {"erf", Op::kErf}, {"sin", Op::kSin}, {"cos", Op::kCos}, {"floor", Op::kFloor},
      {"ceil", Op::kCeil}, {"round", Op::kRound}, {"logistic", Op::kLogistic}, {"not", Op::kNot},
      {"add", Op::kAdd}, {"sub", Op::kSub}, {"mul", Op::kMul}, {"div", Op::kDiv},
      {"max", Op::kMax}, {"min", Op::kMin}, {"pow", Op::kPow}, {"rem", Op::kRem},
      {"and", Op::kAnd}, {"or", Op::kOr}, {"xor", Op::kXor}, {"eq", Op::kEq}, {"ne", Op::kNe},
      {"lt", Op::kLt}, {"le", Op::kLe}, {"gt", Op::kGt}, {"ge", Op::kGe}};
  for (auto& [name, op] : kOps)
    if (n == name) return op;
  throw_internal_error("cpu: unknown elementwise op " + n);
}

LoopKernelRunner::LoopKernelRunner(const lir::LoopKernel& k, const lir::Program& p) : k_(k) {
  for (const auto& b : p.buffers) buffer_dtypes_.push_back(b.dtype);
  for (const auto& e : k.exprs) {
    PreparedExpr pe{e, class_of(e.dtype)};
    if (e.kind == lir::ExprKind::kUnary || e.kind == lir::ExprKind::kBinary) pe.op = op_from_name(e.op);
    if (!e.args.empty()) pe.arg_cls = class_of(k.exprs[e.args[0]].dtype);
    if (e.kind == lir::ExprKind::kSelect && e.args.size() == 3) pe.arg_cls = class_of(k.exprs[e.args[1]].dtype);
    exprs_.push_back(std::move(pe));
  }
  // A reduction over no dims is a copy.
  if (static_cast<size_t>(k_.num_parallel) == k_.domain.size()) k_.reduce.clear();
  if (k_.domain.empty()) {  // a scalar kernel is a one-point loop
    k_.domain = {1};
    k_.num_parallel = 1;
    for (auto& e : exprs_)
      if (e.expr.kind == lir::ExprKind::kLoad || e.expr.kind == lir::ExprKind::kIndex)
        e.expr.load.strides.push_back(0);
  }
}

void LoopKernelRunner::run(const std::vector<void*>& ptrs) const {
  if (!k_.reduce.empty()) return run_reduce(ptrs);
  run_elementwise(ptrs);
}

void LoopKernelRunner::eval_run(const std::vector<void*>& ptrs, std::vector<int64_t>& idx,
                                int64_t c0, int n, unsigned char* slots) const {
  const size_t inner = k_.domain.size() - 1;
  for (size_t ei = 0; ei < exprs_.size(); ++ei) {
    const PreparedExpr& pe = exprs_[ei];
    const lir::Expr& e = pe.expr;
    auto id = static_cast<int32_t>(ei);
    switch (e.kind) {
      case lir::ExprKind::kLoad: {
        const auto& L = e.load;
        int64_t base = L.offset;
        for (size_t d = 0; d < inner; ++d) base += L.strides[d] * idx[d];
        int64_t st = L.strides[inner];
        DType dt = buffer_dtypes_[L.buffer];
        const void* src = ptrs[L.buffer];
        bool outer_ok = true;
        int64_t lo = 0, hi = INT64_MAX;
        for (auto& g : L.guards) {
          if (static_cast<size_t>(g.dim) == inner) lo = std::max(lo, g.lo), hi = std::min(hi, g.hi);
          else outer_ok = outer_ok && idx[g.dim] >= g.lo && idx[g.dim] < g.hi;
        }
        for (int j = 0; j < n; ++j) {
          int64_t c = c0 + j;
          bool ok = outer_ok && c >= lo && c < hi;
          int64_t a = base + st * c;
          switch (pe.cls) {
            case Cls::kF32: slot<float>(slots, id)[j] = ok ? load_f(dt, src, a) : 0.f; break;
            case Cls::kF64: slot<double>(slots, id)[j] = ok ? static_cast<const double*>(src)[a] : 0.0; break;
            case Cls::kI64: slot<int64_t>(slots, id)[j] = ok ? load_i(dt, src, a) : 0; break;
          }
        }
        break;
      }
      case lir::ExprKind::kConst:
        for (int j = 0; j < n; ++j) {
          switch (pe.cls) {
            case Cls::kF32: slot<float>(slots, id)[j] = round_to(e.dtype, static_cast<float>(e.value)); break;
            case Cls::kF64: slot<double>(slots, id)[j] = e.value; break;
            case Cls::kI64: slot<int64_t>(slots, id)[j] = wrap_to(e.dtype, static_cast<int64_t>(e.value)); break;
          }
        }
        break;
      case lir::ExprKind::kIndex: {
        int64_t base = e.load.offset;
        for (size_t d = 0; d < inner; ++d) base += e.load.strides[d] * idx[d];
        int64_t st = e.load.strides[inner];
        for (int j = 0; j < n; ++j) {
          int64_t v = base + st * (c0 + j);
          switch (pe.cls) {
            case Cls::kF32: slot<float>(slots, id)[j] = round_to(e.dtype, static_cast<float>(v)); break;
            case Cls::kF64: slot<double>(slots, id)[j] = static_cast<double>(v); break;
            case Cls::kI64: slot<int64_t>(slots, id)[j] = wrap_to(e.dtype, v); break;
          }
        }
        break;
      }
      case lir::ExprKind::kInRange: {
        int64_t* r = slot<int64_t>(slots, id);
        if (static_cast<size_t>(e.dim) == inner) {
          for (int j = 0; j < n; ++j) r[j] = c0 + j >= e.lo && c0 + j < e.hi;
        } else {
          int64_t v = idx[e.dim] >= e.lo && idx[e.dim] < e.hi;
          for (int j = 0; j < n; ++j) r[j] = v;
        }
        break;
      }
      case lir::ExprKind::kUnary: {
        int32_t a = e.args[0];
        switch (pe.cls) {
          case Cls::kF32: {
            float *x = slot<float>(slots, a), *r = slot<float>(slots, id);
            for (int j = 0; j < n; ++j) r[j] = round_to(e.dtype, float_unary(pe.op, x[j]));
            break;
          }
          case Cls::kF64: {
            double *x = slot<double>(slots, a), *r = slot<double>(slots, id);
            for (int j = 0; j < n; ++j) r[j] = float_unary(pe.op, x[j]);
            break;
          }
          case Cls::kI64: {
            int64_t *x = slot<int64_t>(slots, a), *r = slot<int64_t>(slots, id);
            // `not` on bool is logical; on integers bitwise.
            if (pe.op == Op::kNot && e.dtype == DType::kBool)
              for (int j = 0; j < n; ++j) r[j] = !x[j];
            else
              for (int j = 0; j < n; ++j) r[j] = wrap_to(e.dtype, int_unary(pe.op, x[j]));
            break;
          }
        }
        break;
      }
      case lir::ExprKind::kBinary: {
        int32_t a = e.args[0], b = e.args[1];
        if (is_compare(pe.op)) {
          int64_t* r = slot<int64_t>(slots, id);
          switch (pe.arg_cls) {
            case Cls::kF32: for (int j = 0; j < n; ++j) r[j] = compare(pe.op, slot<float>(slots, a)[j], slot<float>(slots, b)[j]); break;
            case Cls::kF64: for (int j = 0; j < n; ++j) r[j] = compare(pe.op, slot<double>(slots, a)[j], slot<double>(slots, b)[j]); break;
            case Cls::kI64: for (int j = 0; j < n; ++j) r[j] = compare(pe.op, slot<int64_t>(slots, a)[j], slot<int64_t>(slots, b)[j]); break;
          }
          break;
        }
        switch (pe.cls) {
          case Cls::kF32: {
            float *x = slot<float>(slots, a), *y = slot<float>(slots, b), *r = slot<float>(slots, id);
            if (e.dtype == DType::kF32) {
              switch (pe.op) {  // the common ops as plain loops the compiler vectorises
                case Op::kAdd: for (int j = 0; j < n; ++j) r[j] = x[j] + y[j]; break;
                case Op::kSub: for (int j = 0; j < n; ++j) r[j] = x[j] - y[j]; break;
                case Op::kMul: for (int j = 0; j < n; ++j) r[j] = x[j] * y[j]; break;
                case Op::kDiv: for (int j = 0; j < n; ++j) r[j] = x[j] / y[j]; break;
                default: for (int j = 0; j < n; ++j) r[j] = float_binary(pe.op, x[j], y[j]);
              }
            } else {
              for (int j = 0; j < n; ++j) r[j] = round_to(e.dtype, float_binary(pe.op, x[j], y[j]));
            }
            break;
          }
          case Cls::kF64: {
            double *x = slot<double>(slots, a), *y = slot<double>(slots, b), *r = slot<double>(slots, id);
            for (int j = 0; j < n; ++j) r[j] = float_binary(pe.op, x[j], y[j]);
            break;
          }
          case Cls::kI64: {
            int64_t *x = slot<int64_t>(slots, a), *y = slot<int64_t>(slots, b), *r = slot<int64_t>(slots, id);
            for (int j = 0; j < n; ++j) r[j] = wrap_to(e.dtype, int_binary(pe.op, x[j], y[j]));
            break;
          }
        }
        break;
      }
      case lir::ExprKind::kSelect: {
        int64_t* c = slot<int64_t>(slots, e.args[0]);
        int32_t t = e.args[1], f = e.args[2];
        switch (pe.cls) {
          case Cls::kF32: for (int j = 0; j < n; ++j) slot<float>(slots, id)[j] = c[j] ? slot<float>(slots, t)[j] : slot<float>(slots, f)[j]; break;
          case Cls::kF64: for (int j = 0; j < n; ++j) slot<double>(slots, id)[j] = c[j] ? slot<double>(slots, t)[j] : slot<double>(slots, f)[j]; break;
          case Cls::kI64: for (int j = 0; j < n; ++j) slot<int64_t>(slots, id)[j] = c[j] ? slot<int64_t>(slots, t)[j] : slot<int64_t>(slots, f)[j]; break;
        }
        break;
      }
      case lir::ExprKind::kConvert: {
        int32_t a = e.args[0];
        for (int j = 0; j < n; ++j) {
          double fv = 0;
          int64_t iv = 0;
          bool from_int = pe.arg_cls == Cls::kI64;
          if (pe.arg_cls == Cls::kF32) fv = slot<float>(slots, a)[j];
          else if (pe.arg_cls == Cls::kF64) fv = slot<double>(slots, a)[j];
          else iv = slot<int64_t>(slots, a)[j];
          switch (pe.cls) {
            case Cls::kF32:
              // f64 -> f32 -> f16 would round twice; converting a double straight to half
              // precision goes through f32 here, which can differ in the last bit on ties.
              slot<float>(slots, id)[j] = round_to(e.dtype, from_int ? static_cast<float>(iv) : static_cast<float>(fv));
              break;
            case Cls::kF64: slot<double>(slots, id)[j] = from_int ? static_cast<double>(iv) : fv; break;
            case Cls::kI64:
              slot<int64_t>(slots, id)[j] =
                  e.dtype == DType::kBool ? (from_int ? iv != 0 : fv != 0)
                  : from_int               ? wrap_to(e.dtype, iv)
                                           : scalar::float_to_int(e.dtype, fv);
              break;
          }
        }
        break;
      }
    }
  }
}

void LoopKernelRunner::run_elementwise(const std::vector<void*>& ptrs) const {
  const auto& dom = k_.domain;
  const size_t rank = dom.size();
  int64_t inner = dom[rank - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= dom[d];
  if (rows == 0 || inner == 0) return;
  const lir::Store& st = k_.stores[0];
  void* out = ptrs[st.buffer];
  DType odt = buffer_dtypes_[st.buffer];
  Cls ocls = exprs_[st.expr].cls;
  int64_t grain = std::max<int64_t>(1, kGrainPoints / inner);
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, grain), [&](const tbb::blocked_range<int64_t>& r) {
    std::vector<unsigned char> slots(exprs_.size() * kSlotBytes);
    std::vector<int64_t> idx(rank, 0);
    for (int64_t row = r.begin(); row < r.end(); ++row) {
      int64_t rem = row;
      for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) idx[d] = rem % dom[d], rem /= dom[d];
      for (int64_t c0 = 0; c0 < inner; c0 += kBlock) {
        int n = static_cast<int>(std::min<int64_t>(kBlock, inner - c0));
        eval_run(ptrs, idx, c0, n, slots.data());
        int64_t o = row * inner + c0;
        switch (ocls) {
          case Cls::kF32: {
            float* v = slot<float>(slots.data(), st.expr);
            if (odt == DType::kF32) std::memcpy(static_cast<float*>(out) + o, v, n * sizeof(float));
            else for (int j = 0; j < n; ++j) store_f(odt, out, o + j, v[j]);
            break;
          }
          case Cls::kF64: std::memcpy(static_cast<double*>(out) + o, slot<double>(slots.data(), st.expr), n * sizeof(double)); break;
          case Cls::kI64: for (int j = 0; j < n; ++j) store_i(odt, out, o + j, slot<int64_t>(slots.data(), st.expr)[j]); break;
        }
      }
    }
  });
}

namespace {

template <typename Acc>
Acc reduce_init(const std::string& kind) {
  if (kind == "sum") return Acc(0);
  if (kind == "prod") return Acc(1);
  if constexpr (std::is_floating_point_v<Acc>) return kind == "max" ? -INFINITY : INFINITY;
  else return kind == "max" ? INT64_MIN : INT64_MAX;
}

template <typename T>
T fmax_or(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return fmax_nan(a, b);
  else return a > b ? a : b;
}
template <typename T>
T fmin_or(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return fmin_nan(a, b);
  else return a < b ? a : b;
}

template <typename Acc, typename T>
void reduce_into(const std::string& kind, Acc& acc, const T* v, int n) {
  if (kind == "sum") for (int j = 0; j < n; ++j) acc += static_cast<Acc>(v[j]);
  else if (kind == "prod") for (int j = 0; j < n; ++j) acc *= static_cast<Acc>(v[j]);
  else if (kind == "max") for (int j = 0; j < n; ++j) acc = fmax_or(acc, static_cast<Acc>(v[j]));
  else for (int j = 0; j < n; ++j) acc = fmin_or(acc, static_cast<Acc>(v[j]));
}

}  // namespace

void LoopKernelRunner::run_reduce(const std::vector<void*>& ptrs) const {
  const auto& dom = k_.domain;
  const size_t rank = dom.size();
  const auto np = static_cast<size_t>(k_.num_parallel);
  int64_t outs = 1, red = 1;
  for (size_t d = 0; d < np; ++d) outs *= dom[d];
  for (size_t d = np; d < rank; ++d) red *= dom[d];
  const lir::Store& st = k_.stores[0];
  void* out = ptrs[st.buffer];
  DType odt = buffer_dtypes_[st.buffer];
  Cls cls = exprs_[st.expr].cls;
  int64_t inner = dom[rank - 1];
  int64_t grain = std::max<int64_t>(1, kGrainPoints / std::max<int64_t>(red, 1));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, outs, grain), [&](const tbb::blocked_range<int64_t>& r) {
    std::vector<unsigned char> slots(exprs_.size() * kSlotBytes);
    std::vector<int64_t> idx(rank, 0);
    for (int64_t o = r.begin(); o < r.end(); ++o) {
      int64_t rem = o;
      for (int64_t d = static_cast<int64_t>(np) - 1; d >= 0; --d) idx[d] = rem % dom[d], rem /= dom[d];
      // Float sums and products accumulate in double and round once at the store.
      double facc = reduce_init<double>(k_.reduce);
      int64_t iacc = reduce_init<int64_t>(k_.reduce);
      int64_t red_rows = red / std::max<int64_t>(inner, 1);
      for (int64_t rr = 0; rr < red_rows && inner > 0; ++rr) {
        int64_t rrem = rr;
        for (int64_t d = static_cast<int64_t>(rank) - 2; d >= static_cast<int64_t>(np); --d)
          idx[d] = rrem % dom[d], rrem /= dom[d];
        for (int64_t c0 = 0; c0 < inner; c0 += kBlock) {
          int n = static_cast<int>(std::min<int64_t>(kBlock, inner - c0));
          eval_run(ptrs, idx, c0, n, slots.data());
          switch (cls) {
            case Cls::kF32: reduce_into(k_.reduce, facc, slot<float>(slots.data(), st.expr), n); break;
            case Cls::kF64: reduce_into(k_.reduce, facc, slot<double>(slots.data(), st.expr), n); break;
            case Cls::kI64: reduce_into(k_.reduce, iacc, slot<int64_t>(slots.data(), st.expr), n); break;
          }
        }
      }
      switch (cls) {
        case Cls::kF32: store_f(odt, out, o, static_cast<float>(facc)); break;
        case Cls::kF64: static_cast<double*>(out)[o] = facc; break;
        case Cls::kI64: store_i(odt, out, o, wrap_to(odt, iacc)); break;
      }
    }
  });
}

}  // namespace rlx::cpu
