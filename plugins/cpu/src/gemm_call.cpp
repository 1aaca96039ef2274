#include "gemm_call.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>

#include "gemm_epilogue_fusion.h"
#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "scalar_ops.h"

namespace rlx::cpu {

namespace {

std::vector<int64_t> row_major(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Dims (size, stride) that one stride can walk in order: size-1 dims drop out, each other dim's
// stride must be the next one's stride times its size. Returns false when they cannot merge.
bool merge_dims(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                int64_t& stride) {
  stride = 0;
  int64_t expect = -1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (expect == -1) stride = strides[d];
    else if (strides[d] != expect) return false;
    expect = strides[d] * sizes[d];
  }
  return true;
}

bool is_compute_dtype(DType d, bool f64) {
  return f64 ? d == DType::kF64 : (d == DType::kF32 || d == DType::kF16 || d == DType::kBF16);
}

thread_local std::vector<double> tls_gather_a, tls_gather_b, tls_out;

}  // namespace

bool GemmCall::is_product(const std::string& callee) {
  return callee == "native:MatMul" || callee == "native:Linear" || callee == "dot_general";
}

bool GemmCall::handles(const lir::CallKernel& k, const lir::Program& p) {
  if (!is_product(k.callee)) return false;
  if (k.outputs.size() != 1) return false;
  DType d = p.buffers[k.outputs[0]].dtype;
  return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16 || d == DType::kF64;
}

GemmCall::~GemmCall() = default;

GemmCall::GemmCall(const lir::CallKernel& k, const lir::Program& p)
    : inputs_(k.inputs), cache_(std::make_unique<PackCache>()) {
  const lir::Buffer& out = p.buffers[k.outputs[0]];
  out_ = k.outputs[0];
  out_dtype_ = out.dtype;
  f64_ = out.dtype == DType::kF64;
  const lir::Buffer& lhs = p.buffers[k.inputs[0]];
  const lir::Buffer& rhs = p.buffers[k.inputs[1]];
  // Each operand as (batch dims, row dims, column dims) of its buffer: sizes and strides.
  std::vector<int64_t> a_bs, a_bst, a_rs, a_rst, a_cs, a_cst;
  std::vector<int64_t> b_bst, b_rs, b_rst, b_cs, b_cst;
  const auto lst = row_major(lhs.shape), rst = row_major(rhs.shape);
  if (k.callee == "native:Linear") {
    // y[..., N] = x[..., K] W^T (+ bias), W [N, K]
    K_ = lhs.shape.empty() ? 1 : lhs.shape.back();
    N_ = rhs.shape[0];
    M_ = K_ ? lhs.numel() / K_ : product(std::vector<int64_t>(lhs.shape.begin(), lhs.shape.end() - 1));
    a_rs = {M_}, a_rst = {K_}, a_cs = {K_}, a_cst = {1};
    b_rs = {K_}, b_rst = {1}, b_cs = {N_}, b_cst = {K_};
    const int64_t own_inputs = k.attrs.count("epilogue_inputs_from")
                                   ? std::get<int64_t>(k.attrs.at("epilogue_inputs_from"))
                                   : static_cast<int64_t>(k.inputs.size());
    if (own_inputs >= 3) bias_ = k.inputs[2];
  } else if (k.callee == "native:MatMul") {
    // numpy.matmul with broadcast batch dims (operands of rank >= 2, as the op defines them)
    const auto& os = out.shape;
    const size_t orank = os.size();
    M_ = os[orank - 2], N_ = os[orank - 1], K_ = lhs.shape.back();
    batch_sizes_.assign(os.begin(), os.end() - 2);
    auto batch_view = [&](const std::vector<int64_t>& s, const std::vector<int64_t>& st) {
      std::vector<int64_t> strides;
      const size_t lead = batch_sizes_.size() - (s.size() - 2);
      for (size_t i = 0; i < batch_sizes_.size(); ++i)
        strides.push_back(i < lead || s[i - lead] == 1 ? 0 : st[i - lead]);
      return strides;
    };
    a_bst = batch_view(lhs.shape, lst), b_bst = batch_view(rhs.shape, rst);
    const size_t ar = lhs.shape.size(), br = rhs.shape.size();
    a_rs = {M_}, a_rst = {lst[ar - 2]}, a_cs = {K_}, a_cst = {lst[ar - 1]};
    b_rs = {K_}, b_rst = {rst[br - 2]}, b_cs = {N_}, b_cst = {rst[br - 1]};
  } else {  // dot_general
    auto ints = [&](const char* key) { return std::get<IntList>(k.attrs.at(key)); };
    IntList lb = ints("lhs_batch"), rb = ints("rhs_batch"), lc = ints("lhs_contract"), rc = ints("rhs_contract");
    auto free_dims = [](size_t rank, const IntList& x, const IntList& y) {
      IntList f;
      for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d)
        if (std::find(x.begin(), x.end(), d) == x.end() && std::find(y.begin(), y.end(), d) == y.end())
          f.push_back(d);
      return f;
    };
    IntList lf = free_dims(lhs.shape.size(), lb, lc), rf = free_dims(rhs.shape.size(), rb, rc);
    M_ = N_ = K_ = 1;
    for (int64_t d : lb) batch_sizes_.push_back(lhs.shape[d]), a_bst.push_back(lst[d]);
    for (int64_t d : rb) b_bst.push_back(rst[d]);
    for (int64_t d : lf) a_rs.push_back(lhs.shape[d]), a_rst.push_back(lst[d]), M_ *= lhs.shape[d];
    for (int64_t d : lc) a_cs.push_back(lhs.shape[d]), a_cst.push_back(lst[d]), K_ *= lhs.shape[d];
    for (int64_t d : rc) b_rs.push_back(rhs.shape[d]), b_rst.push_back(rst[d]);
    for (int64_t d : rf) b_cs.push_back(rhs.shape[d]), b_cst.push_back(rst[d]), N_ *= rhs.shape[d];
  }
  batch_ = product(batch_sizes_);
  auto make = [&](Operand& o, int32_t buf, const lir::Buffer& b, std::vector<int64_t> bst,
                  const std::vector<int64_t>& rs, const std::vector<int64_t>& rst,
                  const std::vector<int64_t>& cs, const std::vector<int64_t>& cst) {
    o.buffer = buf, o.dtype = b.dtype, o.batch_strides = std::move(bst);
    bool ok = merge_dims(rs, rst, o.rs) && merge_dims(cs, cst, o.cs) && is_compute_dtype(b.dtype, f64_);
    if (!ok) {  // copy through the full view into a contiguous [rows, cols] matrix per batch
      o.gather = true;
      o.shape = rs, o.strides = rst;
      o.shape.insert(o.shape.end(), cs.begin(), cs.end());
      o.strides.insert(o.strides.end(), cst.begin(), cst.end());
      o.rs = product(cs), o.cs = 1;
    }
  };
  make(a_, k.inputs[0], lhs, a_bst, a_rs, a_rst, a_cs, a_cst);
  make(b_, k.inputs[1], rhs, b_bst, b_rs, b_rst, b_cs, b_cst);
  const bool b_batched = std::any_of(b_.batch_strides.begin(), b_.batch_strides.end(),
                                     [](int64_t s) { return s != 0; });
  b_packable_ = !b_batched && !b_.gather;
  b_constant_ = p.buffers[p.storage_of(k.inputs[1])].kind == lir::BufferKind::kConstant && b_packable_;
  if (!f64_ && a_.dtype == DType::kBF16 && b_.dtype == DType::kBF16 && !a_.gather && b_packable_ &&
      (out_dtype_ == DType::kF32 || out_dtype_ == DType::kBF16) &&
      bf16_gemm_takes(MatView{nullptr, a_.dtype, a_.rs, a_.cs}, K_))
    bf16_unit_ = bf16_unit();

  // Weights the program carries are packed now, at preparation, so even the first run packs no
  // B; a constant bound to other memory at run time is packed at its first run (packed_b).
  if (b_constant_) {
    const lir::Buffer& w = p.buffers[p.storage_of(k.inputs[1])];
    if (w.data.numel() > 0 && bf16_unit_ != Bf16Unit::kNone)
      bf16_packed_b(w.data.data());
    else if (w.data.numel() > 0)
      packed_b(w.data.data());
  }

  // Linear's bias first, then a fused epilogue whose `acc` then reads the biased value.
  int acc_reg = -1;
  if (bias_ >= 0 && !f64_ && out_dtype_ != DType::kF32) {
    if (p.buffers[bias_].dtype != out_dtype_ || k.attrs.count("epilogue"))
      throw_internal_error("cpu GEMM: a 16-bit Linear's bias must have its type and no epilogue");
    narrow_bias_ = true;
  } else if (bias_ >= 0 && !f64_) {
    if (p.buffers[bias_].dtype != DType::kF32)
      throw_internal_error("cpu GEMM: Linear bias must be f32 on the f32 path");
    int a = epilogue_.acc();
    int b = epilogue_.load(nullptr, 0, 1);
    epilogue_loads_.push_back({2, 0, 0, 1});
    acc_reg = epilogue_.binary(EpOp::kAdd, a, b);
  }
  if (k.attrs.count("epilogue")) {
    if (f64_) throw_internal_error("cpu GEMM: fused epilogues are f32 only");
    decode_epilogue(std::get<std::string>(k.attrs.at("epilogue")), acc_reg, epilogue_,
                    [&](int32_t input, int64_t offset, int64_t rs, int64_t cs) {
                      epilogue_loads_.push_back({input, offset, rs, cs});
                    });
  }
}

void GemmCall::forget_packed() const {
  std::lock_guard<std::mutex> lock(cache_->mu);
  cache_->packed.reset();
  cache_->bf16_packed.reset();
  cache_->source = nullptr;
}

std::shared_ptr<const PackedB> GemmCall::packed_b(const void* b) const {
  std::lock_guard<std::mutex> lock(cache_->mu);
  if (!cache_->packed || cache_->source != b || cache_->isa != gemm_isa()) {
    cache_->packed = std::make_shared<PackedB>(pack_b(MatView{b, b_.dtype, b_.rs, b_.cs}, K_, N_, f64_));
    cache_->source = b;
    cache_->isa = gemm_isa();
  }
  return cache_->packed;
}

std::shared_ptr<const PackedBf16B> GemmCall::bf16_packed_b(const void* b) const {
  auto pack = [&] {
    return std::make_shared<const PackedBf16B>(
        pack_bf16_b(MatView{b, b_.dtype, b_.rs, b_.cs}, K_, N_));
  };
  if (!b_constant_) return pack();
  std::lock_guard<std::mutex> lock(cache_->mu);
  if (!cache_->bf16_packed || cache_->source != b) {
    cache_->bf16_packed = pack();
    cache_->source = b;
  }
  return cache_->bf16_packed;
}

void GemmCall::run_bf16(const char* a_base, const void* b_base, char* out, const GemmEpilogue& ep,
                        const uint16_t* bias16) const {
  const std::shared_ptr<const PackedBf16B> b = bf16_packed_b(b_base);
  const size_t out_es = dtype_size(out_dtype_);
  for (int64_t bi = 0; bi < batch_; ++bi) {
    int64_t a_off = 0, rem = bi;
    for (int64_t d = static_cast<int64_t>(batch_sizes_.size()) - 1; d >= 0; --d) {
      a_off += rem % batch_sizes_[d] * a_.batch_strides[d];
      rem /= batch_sizes_[d];
    }
    GemmEpilogue shifted = ep;
    for (int i = 0; i < shifted.num_loads; ++i)
      shifted.loads[i].data += bi * M_ * shifted.loads[i].rs;
    bf16_gemm(bf16_unit_, MatView{a_base + a_off * 2, a_.dtype, a_.rs, 1}, M_, *b, &shifted,
              out_dtype_, out + bi * M_ * N_ * out_es, N_, bias16);
  }
}

void GemmCall::run(const std::vector<void*>& ptrs) const {
  const char* a_base = static_cast<const char*>(ptrs[a_.buffer]);
  const char* b_base = static_cast<const char*>(ptrs[b_.buffer]);
  char* out = static_cast<char*>(ptrs[out_]);
  const size_t a_es = dtype_size(a_.dtype), b_es = dtype_size(b_.dtype);
  const size_t c_es = f64_ ? sizeof(double) : sizeof(float);
  const bool direct_out = out_dtype_ == (f64_ ? DType::kF64 : DType::kF32);
  GemmEpilogue ep = epilogue_;
  for (size_t i = 0; i < epilogue_loads_.size(); ++i) {
    const EpilogueLoad& l = epilogue_loads_[i];
    ep.loads[i] = EpLoad{static_cast<const float*>(ptrs[inputs_[l.input]]) + l.offset, l.rs, l.cs};
  }
  const void* narrow_bias = narrow_bias_ ? ptrs[bias_] : nullptr;
  if (bf16_unit_ != Bf16Unit::kNone && (!narrow_bias || out_dtype_ == DType::kBF16)) {
    if (M_ * N_ > 0) run_bf16(a_base, b_base, out, ep, static_cast<const uint16_t*>(narrow_bias));
    return;
  }
  std::shared_ptr<const PackedB> packed = b_constant_ ? packed_b(b_base) : nullptr;

  // One problem of the batch, `whole` = split it over threads (else run on this thread).
  auto one = [&](int64_t bi, bool whole) {
    int64_t a_off = 0, b_off = 0, rem = bi;
    for (int64_t d = static_cast<int64_t>(batch_sizes_.size()) - 1; d >= 0; --d) {
      int64_t i = rem % batch_sizes_[d];
      rem /= batch_sizes_[d];
      a_off += i * a_.batch_strides[d], b_off += i * b_.batch_strides[d];
    }
    GemmArgs g;
    g.M = M_, g.N = N_, g.K = K_, g.f64 = f64_, g.ldc = N_;
    auto view = [&](const Operand& o, const char* base, size_t es, int64_t off,
                    std::vector<double>& tls) {
      if (!o.gather) return MatView{base + off * es, o.dtype, o.rs, o.cs};
      // Rare layouts: copy to contiguous compute-type rows first.
      const int64_t n = product(o.shape);
      tls.resize(static_cast<size_t>(n));
      std::vector<int64_t> idx(o.shape.size(), 0);
      int64_t src = off;
      for (int64_t e = 0; e < n; ++e) {
        if (f64_) tls[e] = o.dtype == DType::kF64 ? reinterpret_cast<const double*>(base)[src]
                                                  : static_cast<double>(load_f(o.dtype, base, src));
        else reinterpret_cast<float*>(tls.data())[e] =
                 o.dtype == DType::kF64 ? static_cast<float>(reinterpret_cast<const double*>(base)[src])
                                        : class_of(o.dtype) == Cls::kF32 ? load_f(o.dtype, base, src)
                                                                         : static_cast<float>(load_i(o.dtype, base, src));
        for (int64_t d = static_cast<int64_t>(o.shape.size()) - 1; d >= 0; --d) {
          if (++idx[d] < o.shape[d]) { src += o.strides[d]; break; }
          src -= o.strides[d] * (o.shape[d] - 1);
          idx[d] = 0;
        }
      }
      return MatView{tls.data(), f64_ ? DType::kF64 : DType::kF32, o.rs, o.cs};
    };
    g.a = view(a_, a_base, a_es, a_off, tls_gather_a);
    g.b = packed ? MatView{} : view(b_, b_base, b_es, b_off, tls_gather_b);
    g.packed = packed.get();
    if (direct_out) {
      g.c = out + bi * M_ * N_ * c_es;
    } else {  // f16 or bf16: f32 sums here, each finished tile rounded into `out` where computed
      tls_out.resize(static_cast<size_t>((M_ * N_ + 1) / 2 + 1));
      g.c = tls_out.data();
      g.narrow = out_dtype_;
      g.narrow_out = out + bi * M_ * N_ * dtype_size(out_dtype_);
      g.narrow_bias = static_cast<const uint16_t*>(narrow_bias);
    }
    GemmEpilogue shifted;
    if (!ep.empty()) {
      shifted = ep;
      for (int i = 0; i < shifted.num_loads; ++i)
        shifted.loads[i].data += bi * M_ * shifted.loads[i].rs;
      g.epilogue = &shifted;
    }
    if (whole) gemm(g);
    else gemm_block(g, 0, M_, 0, N_);
    if (f64_ && bias_ >= 0) {
      const double* bias = static_cast<const double*>(ptrs[bias_]);
      double* c = static_cast<double*>(g.c);
      for (int64_t m = 0; m < M_; ++m)
        for (int64_t n = 0; n < N_; ++n) c[m * N_ + n] += bias[n];
    }
  };
  if (M_ * N_ == 0) return;
  const int64_t threads = tbb::this_task_arena::max_concurrency();
  if (batch_ >= threads && batch_ > 1) {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, batch_, 1),
                      [&](const tbb::blocked_range<int64_t>& r) {
                        for (int64_t bi = r.begin(); bi < r.end(); ++bi) one(bi, false);
                      });
  } else {
    for (int64_t bi = 0; bi < batch_; ++bi) one(bi, true);
  }
}

}  // namespace rlx::cpu
