#include "call_kernel.h"

#include <fmt/format.h>

#include <cstring>

#include "collective_call.h"
#include "complex_gemm.h"
#include "cpu_executable.h"
#include "dequant_matmul.h"
#include "gemm.h"
#include "gemm_call.h"
#include "linalg_kernels.h"
#include "nn_kernels.h"
#include "qconv.h"
#include "qmatmul.h"
#include "rlx/core/error.h"
#include "rlx/core/tensor.h"
#include "scalar_ops.h"
#include "splat_kernels.h"

namespace rlx::cpu {

namespace {

std::vector<int64_t> row_major(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Copies src (dtype dt) into contiguous dst of out_shape, reading element
// sum(src_strides[d] * i[d]); stride 0 broadcasts. Converts to the compute type T.
template <typename T>
void strided_copy(const void* src, DType dt, const std::vector<int64_t>& out_shape,
                  const std::vector<int64_t>& src_strides, T* dst) {
  int64_t n = product(out_shape);
  size_t rank = out_shape.size();
  std::vector<int64_t> idx(rank, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, float>)
      dst[i] = load_f(dt, src, off);
    else if constexpr (std::is_same_v<T, double>)
      dst[i] = static_cast<const double*>(src)[off];
    else
      dst[i] = load_i(dt, src, off);
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++idx[d] < out_shape[d]) {
        off += src_strides[d];
        break;
      }
      off -= src_strides[d] * (out_shape[d] - 1);
      idx[d] = 0;
    }
  }
}

template <typename T>
void store_all(const T* v, int64_t n, DType dt, void* out) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, float>)
      store_f(dt, out, i, v[i]);
    else if constexpr (std::is_same_v<T, double>)
      static_cast<double*>(out)[i] = v[i];
    else
      store_i(dt, out, i, wrap_to(dt, v[i]));
  }
}

// One batched GEMM from operands described by (shape, strides) views already arranged as
// lhs [B, M, K] and rhs [B, K, N] (multi-dim groups flattened by the caller).
template <typename T>
void batched_matmul(const void* a, DType adt, const std::vector<int64_t>& a_shape,
                    const std::vector<int64_t>& a_strides, const void* b, DType bdt,
                    const std::vector<int64_t>& b_shape, const std::vector<int64_t>& b_strides,
                    int64_t batch, int64_t M, int64_t N, int64_t K, DType out_dt, void* out) {
  std::vector<T> A(batch * M * K), B(batch * K * N), C(batch * M * N);
  strided_copy(a, adt, a_shape, a_strides, A.data());
  strided_copy(b, bdt, b_shape, b_strides, B.data());
  gemm_reference<T>(batch, M, N, K, A.data(), B.data(), C.data());
  store_all(C.data(), batch * M * N, out_dt, out);
}

template <typename F>
void by_class(DType dt, F&& f) {
  switch (class_of(dt)) {
    case Cls::kF32:
      f(float{});
      break;
    case Cls::kF64:
      f(double{});
      break;
    case Cls::kI64:
      f(int64_t{});
      break;
  }
}

// A while body's results that are its arguments at the same position, returned unchanged (a
// CG's matrix and other loop invariants), are each copied by an output-copy kernel every
// iteration. Those kernels are dropped here and the loop passes one tensor as both argument and
// result, so invariants cost nothing per iteration. Returns which positions pass through.
std::vector<bool> drop_pass_through_copies(lir::Program& body) {
  std::vector<bool> through(body.outputs.size(), false);
  if (body.inputs.size() != body.outputs.size()) return through;
  std::vector<bool> drop(body.kernels.size(), false);
  for (size_t i = 0; i < body.outputs.size(); ++i) {
    const int32_t out = body.outputs[i].second, in = body.inputs[i].second;
    const lir::Buffer& b = body.buffers[in];
    for (size_t n = 0; n < body.kernels.size(); ++n) {
      const auto* lk = std::get_if<lir::LoopKernel>(&body.kernels[n]);
      if (!lk || lk->stores.size() != 1 || lk->stores[0].buffer != out || !lk->reduce.empty())
        continue;
      const lir::Expr& e = lk->exprs.at(lk->stores[0].expr);
      if (e.kind == lir::ExprKind::kLoad && e.load.buffer == in && e.load.offset == 0 &&
          e.load.guards.empty() && lk->domain == b.shape && e.load.strides == row_major(b.shape) &&
          e.dtype == b.dtype && body.buffers[out].dtype == b.dtype) {
        drop[n] = through[i] = true;
        break;
      }
    }
  }
  std::vector<lir::Kernel> kept;
  for (size_t n = 0; n < body.kernels.size(); ++n)
    if (!drop[n]) kept.push_back(std::move(body.kernels[n]));
  body.kernels = std::move(kept);
  return through;
}

}  // namespace

CallKernelRunner::CallKernelRunner(const lir::CallKernel& k, const lir::Program& p) : k_(k) {
  for (int32_t b : k.inputs) in_.push_back(p.buffers[b]);
  for (int32_t b : k.outputs) out_.push_back(p.buffers[b]);
  if (k.callee == "while" && k.regions.size() == 2) {
    regions_.push_back(std::make_unique<CpuExecutable>(*k.regions[0]));
    lir::Program body = *k.regions[1];
    pass_through_ = drop_pass_through_copies(body);
    regions_.push_back(std::make_unique<CpuExecutable>(body));
  } else {
    for (auto& r : k.regions) regions_.push_back(std::make_unique<CpuExecutable>(*r));
  }
  static const char* kKnown[] = {"dot_general",
                                 "gather",
                                 "scatter",
                                 "while",
                                 "native:MatMul",
                                 "native:Linear",
                                 "native:DequantMatMul",
                                 "native:DequantizeRows",
                                 "native:QMatMul",
                                 "native:QConv"};
  if (std::find_if(std::begin(kKnown), std::end(kKnown),
                   [&](const char* s) { return k.callee == s; }) == std::end(kKnown) &&
      !is_nn_callee(k.callee) && !is_splat_callee(k.callee) && !is_linalg_callee(k.callee) &&
      !is_collective_callee(k.callee))
    throw_internal_error("cpu: no library call for " + k.callee);
  // Float GEMMs take the packed path; integer ones the baseline below.
  if (GemmCall::handles(k, p)) gemm_ = std::make_unique<GemmCall>(k, p);
  // The baseline computes the bare product: a fused epilogue it would drop is an internal error,
  // never a wrong result.
  if (!gemm_ && GemmCall::is_product(k.callee) && k.attrs.count("epilogue"))
    throw_internal_error("cpu: a " + k.callee + " with a fused epilogue has no packed GEMM to run it");
  if (k.callee == "native:QMatMul") qmatmul_ = std::make_unique<QMatMulCall>(k_, p);
}

CallKernelRunner::~CallKernelRunner() = default;
CallKernelRunner::CallKernelRunner(CallKernelRunner&&) noexcept = default;

void CallKernelRunner::b_may_be_fixed(const std::vector<bool>& fixed, const lir::Program& p) {
  if (gemm_ && fixed[p.storage_of(gemm_->b_input())]) gemm_->treat_b_as_fixed();
}

void CallKernelRunner::forget_packed() const {
  if (gemm_) gemm_->forget_packed();
  if (qmatmul_) qmatmul_->forget_packed();
}

std::string CallKernelRunner::where() const {
  return k_.loc.empty() ? k_.callee : fmt::format("{} ('{}')", k_.callee, k_.loc);
}

bool CallKernelRunner::in_background() const { return runs_in_background(k_); }

BackgroundCollective CallKernelRunner::start(const std::vector<void*>& ptrs) const {
  return start_collective(k_, in_, ptrs);
}

void CallKernelRunner::run(const std::vector<void*>& ptrs) const {
  if (gemm_) return gemm_->run(ptrs);
  if (qmatmul_) return qmatmul_->run(ptrs);
  const std::string& c = k_.callee;
  if (c == "dot_general") return dot_general(ptrs);
  if (c == "native:MatMul") return matmul(ptrs);
  if (c == "native:Linear") return linear(ptrs);
  if (c == "native:DequantMatMul") return run_dequant_matmul(k_, in_, out_, ptrs);
  if (c == "native:DequantizeRows") return run_dequantize_rows(k_, in_, ptrs);
  if (c == "native:QConv") return run_qconv(k_, in_, out_, ptrs);
  if (is_nn_callee(c)) return run_nn_kernel(k_, in_, out_, ptrs);          // nn_kernels.h
  if (is_splat_callee(c)) return run_splat_kernel(k_, in_, ptrs);           // splat_kernels.h
  if (is_linalg_callee(c)) return run_linalg_kernel(k_, in_, out_, ptrs);  // linalg_kernels.h
  if (is_collective_callee(c)) return run_collective(k_, in_, ptrs);        // collective_call.h
  if (c == "gather") return gather(ptrs);
  if (c == "scatter") return scatter(ptrs);
  if (c == "while") return while_loop(ptrs);
}

void CallKernelRunner::dot_general(const std::vector<void*>& ptrs) const {
  auto ints = [&](const char* key) { return std::get<IntList>(k_.attrs.at(key)); };
  IntList lb = ints("lhs_batch"), rb = ints("rhs_batch"), lc = ints("lhs_contract"),
          rc = ints("rhs_contract");
  const auto &ls = in_[0].shape, &rs = in_[1].shape;
  auto lst = row_major(ls), rst = row_major(rs);
  auto free_dims = [](size_t rank, const IntList& a, const IntList& b) {
    IntList f;
    for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d)
      if (std::find(a.begin(), a.end(), d) == a.end() &&
          std::find(b.begin(), b.end(), d) == b.end())
        f.push_back(d);
    return f;
  };
  IntList lf = free_dims(ls.size(), lb, lc), rf = free_dims(rs.size(), rb, rc);
  // lhs viewed as (batch..., free..., contract...), rhs as (batch..., contract..., free...).
  std::vector<int64_t> a_shape, a_str, b_shape, b_str;
  int64_t B = 1, M = 1, N = 1, K = 1;
  for (int64_t d : lb) a_shape.push_back(ls[d]), a_str.push_back(lst[d]), B *= ls[d];
  for (int64_t d : lf) a_shape.push_back(ls[d]), a_str.push_back(lst[d]), M *= ls[d];
  for (int64_t d : lc) a_shape.push_back(ls[d]), a_str.push_back(lst[d]), K *= ls[d];
  for (int64_t d : rb) b_shape.push_back(rs[d]), b_str.push_back(rst[d]);
  for (int64_t d : rc) b_shape.push_back(rs[d]), b_str.push_back(rst[d]);
  for (int64_t d : rf) b_shape.push_back(rs[d]), b_str.push_back(rst[d]), N *= rs[d];
  if (out_[0].dtype == DType::kC64)
    return complex_batched_matmul(ptrs[k_.inputs[0]], a_shape, a_str, ptrs[k_.inputs[1]], b_shape,
                                  b_str, B, M, N, K, ptrs[k_.outputs[0]]);
  by_class(out_[0].dtype, [&](auto t) {
    using T = decltype(t);
    batched_matmul<T>(ptrs[k_.inputs[0]], in_[0].dtype, a_shape, a_str, ptrs[k_.inputs[1]],
                      in_[1].dtype, b_shape, b_str, B, M, N, K, out_[0].dtype, ptrs[k_.outputs[0]]);
  });
}

// numpy.matmul with broadcast batch dims: each operand is read through stride-0 views.
void CallKernelRunner::matmul(const std::vector<void*>& ptrs) const {
  const auto &as = in_[0].shape, &bs = in_[1].shape, &os = out_[0].shape;
  size_t orank = os.size();
  int64_t M = os[orank - 2], N = os[orank - 1], K = as.back();
  std::vector<int64_t> batch(os.begin(), os.end() - 2);
  auto view = [&](const std::vector<int64_t>& s, bool lhs) {
    auto st = row_major(s);
    std::vector<int64_t> shape = batch, strides;
    size_t lead = batch.size() - (s.size() - 2);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (i < lead || s[i - lead] == 1)
        strides.push_back(0);
      else
        strides.push_back(st[i - lead]);
    }
    size_t r = s.size();
    if (lhs)
      shape.insert(shape.end(), {M, K}), strides.insert(strides.end(), {st[r - 2], st[r - 1]});
    else
      shape.insert(shape.end(), {K, N}), strides.insert(strides.end(), {st[r - 2], st[r - 1]});
    return std::make_pair(shape, strides);
  };
  auto [a_shape, a_str] = view(as, true);
  auto [b_shape, b_str] = view(bs, false);
  if (out_[0].dtype == DType::kC64)
    return complex_batched_matmul(ptrs[k_.inputs[0]], a_shape, a_str, ptrs[k_.inputs[1]], b_shape,
                                  b_str, product(batch), M, N, K, ptrs[k_.outputs[0]]);
  by_class(out_[0].dtype, [&](auto t) {
    using T = decltype(t);
    batched_matmul<T>(ptrs[k_.inputs[0]], in_[0].dtype, a_shape, a_str, ptrs[k_.inputs[1]],
                      in_[1].dtype, b_shape, b_str, product(batch), M, N, K, out_[0].dtype,
                      ptrs[k_.outputs[0]]);
  });
}

// y = x W^T + b with W [N, K]: W is read transposed through strides, the bias added in the
// compute type before the single rounding store.
void CallKernelRunner::linear(const std::vector<void*>& ptrs) const {
  const auto &xs = in_[0].shape, &ws = in_[1].shape;
  int64_t K = xs.back(), N = ws[0], M = product(xs) / std::max<int64_t>(K, 1);
  by_class(out_[0].dtype, [&](auto t) {
    using T = decltype(t);
    std::vector<T> A(M * K), B(K * N), C(M * N);
    strided_copy(ptrs[k_.inputs[0]], in_[0].dtype, {M, K}, {K, 1}, A.data());
    strided_copy(ptrs[k_.inputs[1]], in_[1].dtype, {K, N}, {1, K}, B.data());
    gemm_reference<T>(1, M, N, K, A.data(), B.data(), C.data());
    if (in_.size() == 3) {
      std::vector<T> bias(N);
      strided_copy(ptrs[k_.inputs[2]], in_[2].dtype, {N}, {1}, bias.data());
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) C[m * N + n] += bias[n];
    }
    store_all(C.data(), M * N, out_[0].dtype, ptrs[k_.outputs[0]]);
  });
}

namespace {

// Negative indices count from the end (numpy, ONNX); anything outside [-len, len) is an error
// naming the call, never a wild read.
int64_t checked_index(int64_t v, int64_t len, const std::string& where, int64_t pos) {
  int64_t i = v < 0 ? v + len : v;
  if (i < 0 || i >= len)
    throw_index_error(where, v, pos, len);
  return i;
}

}  // namespace

void CallKernelRunner::gather(const std::vector<void*>& ptrs) const {
  const auto& s = in_[0].shape;
  int64_t axis = std::get<int64_t>(k_.attrs.at("axis"));
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  int64_t outer = product({s.begin(), s.begin() + axis}), len = s[axis];
  int64_t inner = product({s.begin() + axis + 1, s.end()});
  int64_t nidx = in_[1].numel();
  size_t es = dtype_size(in_[0].dtype);
  const char* src = static_cast<const char*>(ptrs[k_.inputs[0]]);
  char* dst = static_cast<char*>(ptrs[k_.outputs[0]]);
  const void* ids = ptrs[k_.inputs[1]];
  std::vector<int64_t> rows(nidx);
  for (int64_t j = 0; j < nidx; ++j)
    rows[j] = checked_index(load_i(in_[1].dtype, ids, j), len, where(), j);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < nidx; ++j)
      std::memcpy(dst + ((o * nidx + j) * inner) * es, src + ((o * len + rows[j]) * inner) * es,
                  inner * es);
}

void CallKernelRunner::scatter(const std::vector<void*>& ptrs) const {
  const auto& s = in_[0].shape;
  int64_t axis = std::get<int64_t>(k_.attrs.at("axis"));
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  bool add = k_.attrs.count("reduce") && std::get<std::string>(k_.attrs.at("reduce")) == "add";
  int64_t outer = product({s.begin(), s.begin() + axis}), len = s[axis];
  int64_t inner = product({s.begin() + axis + 1, s.end()});
  int64_t nidx = in_[1].numel();
  DType dt = in_[0].dtype;
  size_t es = dtype_size(dt);
  // The same memory when the caller updates the operand in place (a KV cache, see the runtime's
  // in_place.h): its rows are already where they belong.
  if (ptrs[k_.outputs[0]] != ptrs[k_.inputs[0]])
    std::memcpy(ptrs[k_.outputs[0]], ptrs[k_.inputs[0]], in_[0].nbytes());
  const void* ids = ptrs[k_.inputs[1]];
  void* out = ptrs[k_.outputs[0]];
  const void* upd = ptrs[k_.inputs[2]];
  std::vector<int64_t> rows(nidx);
  for (int64_t j = 0; j < nidx; ++j)
    rows[j] = checked_index(load_i(in_[1].dtype, ids, j), len, where(), j);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < nidx; ++j) {
      int64_t d0 = (o * len + rows[j]) * inner, s0 = (o * nidx + j) * inner;
      if (!add) {
        std::memcpy(static_cast<char*>(out) + d0 * es, static_cast<const char*>(upd) + s0 * es,
                    inner * es);
        continue;
      }
      for (int64_t i = 0; i < inner; ++i) {
        switch (class_of(dt)) {
          case Cls::kF32:
            store_f(dt, out, d0 + i, load_f(dt, out, d0 + i) + load_f(dt, upd, s0 + i));
            break;
          case Cls::kF64:
            static_cast<double*>(out)[d0 + i] += static_cast<const double*>(upd)[s0 + i];
            break;
          case Cls::kI64:
            store_i(dt, out, d0 + i,
                    wrap_to(dt, load_i(dt, out, d0 + i) + load_i(dt, upd, s0 + i)));
            break;
        }
      }
    }
}

// while: the carried values live in host tensors; cond and body are programs of their own,
// bound by position (region inputs = carried values, body outputs = next carried values).
void CallKernelRunner::while_loop(const std::vector<void*>& ptrs) const {
  std::vector<Tensor> state;
  for (size_t i = 0; i < in_.size(); ++i) {
    Tensor t(in_[i].dtype, in_[i].shape);
    std::memcpy(t.data(), ptrs[k_.inputs[i]], t.nbytes());
    state.push_back(t);
  }
  const CpuExecutable& cond = *regions_[0];
  const CpuExecutable& body = *regions_[1];
  // Two sets of carried values, swapped after each step: a long loop (CG) allocates nothing
  // per iteration.
  // A value the body returns unchanged is one tensor in both sets (its copy kernel was dropped).
  std::vector<Tensor> next;
  for (size_t i = 0; i < state.size(); ++i)
    next.push_back(i < pass_through_.size() && pass_through_[i]
                       ? state[i]
                       : Tensor(state[i].dtype(), state[i].shape()));
  Tensor pred(DType::kBool, {});
  for (;;) {
    cond.run_positional(state, {pred});
    if (!pred.as<uint8_t>()[0]) break;
    body.run_positional(state, next);
    std::swap(state, next);
  }
  for (size_t i = 0; i < out_.size(); ++i)
    std::memcpy(ptrs[k_.outputs[i]], state[i].data(), state[i].nbytes());
}

}  // namespace rlx::cpu
