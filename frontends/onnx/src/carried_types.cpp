#include "carried_types.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "rlx/core/error.h"

namespace rlx::onnx {

namespace {

constexpr int kE4M3FN = 17, kE4M3FNUZ = 18, kE5M2 = 19, kE5M2FNUZ = 20, kUINT4 = 21, kINT4 = 22,
              kE2M1 = 23, kUINT2 = 25, kINT2 = 26;

// One small-float format: value of each code, and the codes ONNX's conversions produce.
struct Format {
  int codes;           // 256 or 16
  int sign_bit;        // 0x80 or 0x8
  bool unsigned_zero;  // FNUZ: no negative zero (0x80 is NaN)
  int max_code;        // largest finite positive code
  int nan_code;        // what NaN converts to
  int overflow_code;   // non-saturating overflow (and inf) for positive values
  bool overflow_signed;
};

Format format_of(int t) {
  switch (t) {
    case kE4M3FN:
      return {256, 0x80, false, 0x7E, 0x7F, 0x7F, true};
    case kE4M3FNUZ:
      return {256, 0x80, true, 0x7F, 0x80, 0x80, false};
    case kE5M2:
      return {256, 0x80, false, 0x7B, 0x7E, 0x7C, true};  // NaN as ml_dtypes writes it
    case kE5M2FNUZ:
      return {256, 0x80, true, 0x7F, 0x80, 0x80, false};
    // FLOAT4E2M1 has no NaN or infinity: overflow saturates, NaN becomes the code 0x8.
    case kE2M1:
      return {16, 0x8, false, 0x7, 0x8, 0x7, true};
  }
  throw_internal_error("not a small float type");
}

double decode(int t, int c) {
  auto value = [](int e, int m, int mbits, int bias, bool subnormal) {
    double frac = static_cast<double>(m) / (1 << mbits);
    return subnormal ? std::ldexp(frac, 1 - bias) : std::ldexp(1 + frac, e - bias);
  };
  switch (t) {
    case kE4M3FN: {
      int s = c >> 7, e = (c >> 3) & 0xF, m = c & 7;
      if (e == 15 && m == 7) return NAN;
      double v = value(e, m, 3, 7, e == 0);
      return s ? -v : v;
    }
    case kE4M3FNUZ: {
      if (c == 0x80) return NAN;
      int s = c >> 7, e = (c >> 3) & 0xF, m = c & 7;
      double v = value(e, m, 3, 8, e == 0);
      return s ? -v : v;
    }
    case kE5M2: {
      int s = c >> 7, e = (c >> 2) & 0x1F, m = c & 3;
      if (e == 31) return m ? NAN : (s ? -INFINITY : INFINITY);
      double v = value(e, m, 2, 15, e == 0);
      return s ? -v : v;
    }
    case kE5M2FNUZ: {
      if (c == 0x80) return NAN;
      int s = c >> 7, e = (c >> 2) & 0x1F, m = c & 3;
      double v = value(e, m, 2, 16, e == 0);
      return s ? -v : v;
    }
    case kE2M1: {
      int s = (c >> 3) & 1, e = (c >> 1) & 3, m = c & 1;
      double v = value(e, m, 1, 1, e == 0);
      return s ? -v : v;
    }
  }
  throw_internal_error("not a small float type");
}

}  // namespace

std::optional<CarriedType> carried_type(int t) {
  switch (t) {
    case kE4M3FN:
    case kE4M3FNUZ:
    case kE5M2:
    case kE5M2FNUZ:
      return CarriedType{t, DType::kU8, 8, true, false};
    case kE2M1:
      return CarriedType{t, DType::kU8, 4, true, false};
    case kINT4:
      return CarriedType{t, DType::kI8, 4, false, true};
    case kUINT4:
      return CarriedType{t, DType::kU8, 4, false, false};
    case kINT2:
      return CarriedType{t, DType::kI8, 2, false, true};
    case kUINT2:
      return CarriedType{t, DType::kU8, 2, false, false};
  }
  return std::nullopt;
}

Tensor carried_from_proto(const ::onnx::TensorProto& t, const CarriedType& c, int64_t n,
                          const std::string& where) {
  int per_byte = 8 / c.bits;
  int64_t nbytes = (n + per_byte - 1) / per_byte;
  std::vector<uint8_t> bytes;
  if (t.has_raw_data()) {
    if (static_cast<int64_t>(t.raw_data().size()) != nbytes)
      throw_user_error(fmt::format("{}: raw_data holds {} bytes, {} elements of {} bits need {}",
                                   where, t.raw_data().size(), n, c.bits, nbytes));
    bytes.assign(t.raw_data().begin(), t.raw_data().end());
  } else {
    // int32_data holds one byte (packed elements for 4- and 2-bit types) per entry.
    if (t.int32_data_size() != nbytes)
      throw_user_error(fmt::format("{}: int32_data holds {} values, {} elements of {} bits need {}",
                                   where, t.int32_data_size(), n, c.bits, nbytes));
    for (int32_t v : t.int32_data()) bytes.push_back(static_cast<uint8_t>(v));
  }
  Tensor out(c.storage, std::vector<int64_t>(t.dims().begin(), t.dims().end()));
  int mask = (1 << c.bits) - 1;
  for (int64_t i = 0; i < n; ++i) {
    int v = (bytes[i / per_byte] >> ((i % per_byte) * c.bits)) & mask;
    if (c.is_signed && (v >> (c.bits - 1))) v -= 1 << c.bits;  // sign-extend
    if (c.storage == DType::kI8)
      out.as<int8_t>()[i] = static_cast<int8_t>(v);
    else
      out.as<uint8_t>()[i] = static_cast<uint8_t>(v);
  }
  return out;
}

ValueId decode_small_float(GraphBuilder& b, ValueId codes, int t) {
  Format f = format_of(t);
  std::vector<float> table(f.codes);
  for (int c = 0; c < f.codes; ++c) table[c] = static_cast<float>(decode(t, c));
  ValueId tab = b.constant(Tensor::from<float>(DType::kF32, {f.codes}, table));
  return b.op("gather", {tab, b.convert(codes, DType::kI32)}, {{"axis", int64_t{0}}});
}

ValueId encode_small_float(GraphBuilder& b, ValueId x, int t, bool saturate) {
  Format f = format_of(t);
  DType ct = b.type(x).dtype;
  Shape s = b.type(x).shape;
  // Positive finite values in code order (codes 0 .. max_code are increasing), and the
  // midpoints between neighbours; the last midpoint is the overflow threshold (halfway to the
  // value one step above the largest).
  int K = f.max_code + 1;
  std::vector<double> vals;
  for (int c = 0; c < K; ++c) vals.push_back(decode(t, c));
  std::vector<double> mids;
  for (int k = 0; k + 1 < K; ++k) mids.push_back((vals[k] + vals[k + 1]) / 2);
  mids.push_back(vals[K - 1] + (vals[K - 1] - vals[K - 2]) / 2);
  std::vector<uint8_t> odd;
  for (int k = 0; k < K; ++k) odd.push_back(k % 2);
  Shape wide = s;
  wide.push_back(K);
  IntList lead;
  for (size_t i = 0; i < s.size(); ++i) lead.push_back(static_cast<int64_t>(i));
  auto c = [&](double v) {
    return b.broadcast_in_dim(b.convert(b.scalar(DType::kF64, v), ct), s, {});
  };
  ValueId ax = b.unary("abs", x);
  ValueId axw = b.broadcast_in_dim(ax, wide, lead);
  ValueId mw =
      b.broadcast_in_dim(b.convert(b.constant(Tensor::from<double>(DType::kF64, {K}, mids)), ct),
                         wide, {static_cast<int64_t>(s.size())});
  ValueId oddw = b.broadcast_in_dim(b.constant(Tensor::from<uint8_t>(DType::kBool, {K}, odd)), wide,
                                    {static_cast<int64_t>(s.size())});
  // Index of the nearest value: midpoints passed, plus ties that round up to an even code.
  ValueId up =
      b.binary("or", b.binary("gt", axw, mw), b.binary("and", b.binary("eq", axw, mw), oddw));
  ValueId idx =
      b.reduce(b.convert(up, DType::kI32), {static_cast<int64_t>(s.size())}, ReduceKind::kSum);
  auto ic = [&](int v) { return b.broadcast_in_dim(b.scalar(DType::kI32, v), s, {}); };
  ValueId zero = c(0.0);
  // Negative values and -0 (1 / -0 = -inf) carry the sign bit.
  ValueId neg =
      b.binary("or", b.binary("lt", x, zero),
               b.binary("and", b.binary("eq", x, zero), b.binary("lt", b.div(c(1.0), x), zero)));
  ValueId overflow = b.binary("ge", idx, ic(K));
  ValueId code = b.select(overflow, ic(saturate ? f.max_code : f.overflow_code), idx);
  bool signed_overflow = saturate || f.overflow_signed;
  ValueId sign_ok = signed_overflow ? neg : b.binary("and", neg, b.unary("not", overflow));
  if (f.unsigned_zero) sign_ok = b.binary("and", sign_ok, b.binary("ne", code, ic(0)));
  code = b.select(sign_ok, b.add(code, ic(f.sign_bit)), code);
  code = b.select(b.binary("ne", x, x), ic(f.nan_code), code);
  return b.convert(code, DType::kU8);
}

ValueId wrap_small_int(GraphBuilder& b, ValueId v, const CarriedType& c) {
  Shape s = b.type(v).shape;
  auto ic = [&](int64_t k) {
    return b.broadcast_in_dim(b.scalar(DType::kI64, static_cast<double>(k)), s, {});
  };
  int64_t m = int64_t{1} << c.bits;
  v = b.convert(v, DType::kI64);
  // Floor modulo m, then shift signed types into [-m/2, m/2).
  ValueId shifted = c.is_signed ? b.add(v, ic(m / 2)) : v;
  ValueId r = b.binary("rem", shifted, ic(m));
  r = b.select(b.binary("lt", r, ic(0)), b.add(r, ic(m)), r);
  if (c.is_signed) r = b.sub(r, ic(m / 2));
  return b.convert(r, c.storage);
}

std::pair<double, double> small_int_range(const CarriedType& c) {
  double m = static_cast<double>(1 << c.bits);
  return c.is_signed ? std::pair{-m / 2, m / 2 - 1} : std::pair{0.0, m - 1};
}

}  // namespace rlx::onnx
