#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>

#include "rlx/core/attr.h"
#include "rlx/core/dtype.h"
#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/shape.h"
#include "rlx/core/tensor.h"

namespace rlx {
namespace {

// Runs `f`, expecting an rlx user error; returns its message.
template <typename F>
std::string user_error(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUser) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error was raised";
  return {};
}

TEST(DType, NamesSizesAndClasses) {
  struct Row {
    DType t;
    const char* name;
    size_t size;
    bool fl, in, cx;
  };
  const Row rows[] = {
      {DType::kBool, "bool", 1, false, false, false}, {DType::kI8, "i8", 1, false, true, false},
      {DType::kU8, "u8", 1, false, true, false},      {DType::kI16, "i16", 2, false, true, false},
      {DType::kI32, "i32", 4, false, true, false},    {DType::kI64, "i64", 8, false, true, false},
      {DType::kF16, "f16", 2, true, false, false},    {DType::kBF16, "bf16", 2, true, false, false},
      {DType::kF32, "f32", 4, true, false, false},    {DType::kF64, "f64", 8, true, false, false},
      {DType::kC64, "c64", 8, false, false, true},
      {DType::kU16, "u16", 2, false, true, false},    {DType::kU32, "u32", 4, false, true, false},
      {DType::kU64, "u64", 8, false, true, false},
  };
  ASSERT_EQ(std::size(rows), static_cast<size_t>(kNumDTypes));
  for (int i = 0; i < kNumDTypes; ++i) {
    const Row& r = rows[i];
    EXPECT_EQ(all_dtypes()[i], r.t);
    EXPECT_EQ(dtype_name(r.t), r.name);
    EXPECT_EQ(parse_dtype(r.name), r.t);
    EXPECT_EQ(dtype_size(r.t), r.size) << r.name;
    EXPECT_EQ(is_float(r.t), r.fl) << r.name;
    EXPECT_EQ(is_integer(r.t), r.in) << r.name;
    EXPECT_EQ(is_complex(r.t), r.cx) << r.name;
    EXPECT_EQ(is_unsigned(r.t), r.name[0] == 'u') << r.name;
  }
  EXPECT_EQ(parse_dtype("float32"), std::nullopt);
  EXPECT_EQ(parse_dtype("F32"), std::nullopt);
  EXPECT_EQ(parse_dtype(""), std::nullopt);
}

TEST(Shape, Printing) {
  Shape s = {Dim::symbol("B"), 4};
  EXPECT_EQ(s[0].str(), "B");
  EXPECT_EQ(s[1].str(), "4");
  EXPECT_EQ(shape_str(s), "[B,4]");
  EXPECT_EQ(shape_str({}), "[]");
  EXPECT_EQ((TensorType{DType::kF32, s}.str()), "f32[B,4]");
  EXPECT_EQ((TensorType{DType::kBF16, {}}.str()), "bf16[]");
}

// Found by rten_fuzz (UBSan): a product of huge dims wrapped around. It saturates now, and a
// zero dim anywhere still gives 0 elements.
TEST(Shape, NumElementsSaturatesInsteadOfOverflowing) {
  EXPECT_EQ(num_elements({2, 3, 4}), 24);
  EXPECT_EQ(num_elements({}), 1);
  EXPECT_EQ(num_elements({int64_t{1} << 40, int64_t{1} << 40}), INT64_MAX);
  EXPECT_EQ(num_elements({int64_t{1} << 40, int64_t{1} << 40, 0}), 0);
  // The same for shapes compared by element count (a reshape's check): no wrap-around match.
  const Dim huge{int64_t{1} << 40};
  EXPECT_FALSE(same_num_elements({huge, huge, Dim{1 << 20}}, {Dim{1 << 20}, huge}));
  EXPECT_TRUE(same_num_elements({huge, huge}, {huge, huge}));
}

TEST(Shape, StaticDims) {
  EXPECT_TRUE(is_static({2, 3}));
  EXPECT_TRUE(is_static({}));
  EXPECT_FALSE(is_static({2, Dim::symbol("seq")}));
  EXPECT_EQ(static_dims({2, 3}), (std::vector<int64_t>{2, 3}));
  std::string msg = user_error([] { static_dims({2, Dim::symbol("seq")}); });
  EXPECT_NE(msg.find("'seq'"), std::string::npos) << msg;
}

TEST(Shape, SameNumElements) {
  Dim b = Dim::symbol("B"), s = Dim::symbol("S");
  EXPECT_TRUE(same_num_elements({b, 4, 2}, {8, b}));
  EXPECT_TRUE(same_num_elements({b, s, 6}, {s, 2, b, 3}));
  EXPECT_FALSE(same_num_elements({b, 4}, {b, 8}));
  EXPECT_FALSE(same_num_elements({b, 4}, {s, 4}));
  EXPECT_FALSE(same_num_elements({b, b}, {b, 1}));
  EXPECT_TRUE(same_num_elements({}, {1, 1}));
}

TEST(Shape, Bind) {
  Shape s = {Dim::symbol("B"), 4, Dim::symbol("S")};
  Shape bound = bind_shape(s, {{"B", 2}, {"S", 7}, {"unused", 1}});
  EXPECT_EQ(bound, (Shape{2, 4, 7}));
  std::string msg = user_error([&] { bind_shape(s, {{"S", 7}}); });
  EXPECT_NE(msg.find("symbol 'B' is not bound"), std::string::npos) << msg;
  EXPECT_EQ(num_elements({2, 3, 4}), 24);
  EXPECT_EQ(num_elements({}), 1);
  EXPECT_EQ(num_elements({5, 0}), 0);
}

// Importers derive product dims ("B*S", "4*S") from flattens and reshapes of symbolic shapes.
TEST(Shape, ProductSymbols) {
  Dim b = Dim::symbol("B"), s = Dim::symbol("S");
  EXPECT_TRUE(same_num_elements({b, s, 4}, {Dim::symbol("B*S"), 4}));
  EXPECT_TRUE(same_num_elements({b, s, 4}, {Dim::symbol("4*B*S")}));
  EXPECT_TRUE(same_num_elements({Dim::symbol("2*S"), 3}, {s, 6}));
  EXPECT_FALSE(same_num_elements({b, s}, {Dim::symbol("B*B")}));
  Shape bound = bind_shape({Dim::symbol("B*S"), Dim::symbol("4*S")}, {{"B", 3}, {"S", 5}});
  EXPECT_EQ(bound, (Shape{15, 20}));
  std::string msg = user_error([&] { bind_shape({Dim::symbol("B*T")}, {{"B", 3}}); });
  EXPECT_NE(msg.find("symbol 'T' is not bound"), std::string::npos) << msg;
}

TEST(Tensor, ZeroFilledAndAligned) {
  Tensor t(DType::kF32, {2, 3});
  EXPECT_EQ(t.rank(), 2);
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.shape_str(), "[2,3]");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.as<float>()[i], 0.0f);
  EXPECT_TRUE(t.defined());
}

TEST(Tensor, ScalarAndEmpty) {
  Tensor s(DType::kI64, {});
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.nbytes(), 8u);
  EXPECT_EQ(s.shape_str(), "[]");
  Tensor e(DType::kF32, {3, 0});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.nbytes(), 0u);
  EXPECT_NE(e.data(), nullptr);
  EXPECT_FALSE(Tensor().defined());
}

TEST(Tensor, NegativeDimIsAUserError) {
  std::string msg = user_error([] { Tensor(DType::kF32, {2, -1}); });
  EXPECT_NE(msg.find("negative"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2,-1]"), std::string::npos) << msg;
  user_error([] { Tensor::view(DType::kF32, {-3}, nullptr, nullptr); });
}

TEST(Tensor, CopiesShareCloneCopies) {
  Tensor a = Tensor::from<float>(DType::kF32, {2}, {1.5f, -2.0f});
  Tensor shared = a;
  Tensor deep = a.clone();
  a.as<float>()[0] = 9.0f;
  EXPECT_EQ(shared.as<float>()[0], 9.0f);
  EXPECT_EQ(deep.as<float>()[0], 1.5f);
  EXPECT_EQ(deep.as<float>()[1], -2.0f);
  EXPECT_NE(deep.data(), a.data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(deep.data()) % 64, 0u);
}

TEST(Tensor, ViewKeepsOwnerAlive) {
  auto owner = std::make_shared<std::vector<int32_t>>(std::vector<int32_t>{1, 2, 3, 4});
  Tensor v = Tensor::view(DType::kI32, {2, 2}, owner->data(), owner);
  std::weak_ptr<std::vector<int32_t>> weak = owner;
  owner.reset();
  EXPECT_FALSE(weak.expired());
  EXPECT_EQ(v.scalar_at(3), 4.0);
  v = Tensor();
  EXPECT_TRUE(weak.expired());
}

TEST(Tensor, ScalarAtEveryDType) {
  EXPECT_EQ(Tensor::from<uint8_t>(DType::kBool, {2}, {0, 7}).scalar_at(1), 1.0);
  EXPECT_EQ(Tensor::from<int8_t>(DType::kI8, {1}, {-128}).scalar_at(0), -128.0);
  EXPECT_EQ(Tensor::from<uint8_t>(DType::kU8, {1}, {255}).scalar_at(0), 255.0);
  EXPECT_EQ(Tensor::from<int16_t>(DType::kI16, {1}, {-300}).scalar_at(0), -300.0);
  EXPECT_EQ(Tensor::from<int32_t>(DType::kI32, {1}, {-70000}).scalar_at(0), -70000.0);
  EXPECT_EQ(Tensor::from<int64_t>(DType::kI64, {1}, {int64_t{1} << 40}).scalar_at(0),
            1099511627776.0);
  EXPECT_EQ(Tensor::from<uint16_t>(DType::kF16, {1}, {0x3C00}).scalar_at(0), 1.0);
  EXPECT_EQ(Tensor::from<uint16_t>(DType::kBF16, {1}, {0xC000}).scalar_at(0), -2.0);
  EXPECT_EQ(Tensor::from<float>(DType::kF32, {1}, {0.25f}).scalar_at(0), 0.25);
  EXPECT_EQ(Tensor::from<double>(DType::kF64, {1}, {1e300}).scalar_at(0), 1e300);
  using C = std::complex<float>;
  EXPECT_EQ(Tensor::from<C>(DType::kC64, {1}, {C(3.0f, 4.0f)}).scalar_at(0), 3.0);
}

TEST(Attr, Scalars) {
  EXPECT_EQ(attr_str(int64_t{3}), "3");
  EXPECT_EQ(attr_str(int64_t{-42}), "-42");
  EXPECT_EQ(attr_str(1.0), "1.0");
  EXPECT_EQ(attr_str(-2.0), "-2.0");
  EXPECT_EQ(attr_str(0.5), "0.5");
  EXPECT_EQ(attr_str(1e-05), "1e-05");
  EXPECT_EQ(attr_str(0.1), "0.1");
  EXPECT_EQ(attr_str(123456789.0), "123456789.0");
  EXPECT_EQ(attr_str(1e300), "1e+300");
  EXPECT_EQ(attr_str(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(attr_str(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(attr_str(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(attr_str(-std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(attr_str(true), "true");
  EXPECT_EQ(attr_str(false), "false");
  EXPECT_EQ(attr_str(DType::kBF16), "bf16");
}

TEST(Attr, DoublesRoundTrip) {
  for (double d : {0.1, 1.0 / 3, 2.5e-310, 6.02214076e23, -1e-7, 1e16}) {
    std::string s = attr_str(d);
    double back = 0;
    std::from_chars(s.data(), s.data() + s.size(), back);  // stod refuses subnormals
    EXPECT_EQ(back, d) << s;
    EXPECT_NE(s.find_first_of(".e"), std::string::npos) << s;
  }
}

TEST(Attr, StringsAndLists) {
  EXPECT_EQ(attr_str(std::string("tanh")), "\"tanh\"");
  EXPECT_EQ(attr_str(std::string("a\"b\\c\nd")), "\"a\\\"b\\\\c\\nd\"");
  EXPECT_EQ(attr_str(IntList{1, 2, 3}), "[1, 2, 3]");
  EXPECT_EQ(attr_str(IntList{}), "[]");
  EXPECT_EQ(attr_str(Shape{Dim::symbol("B"), 4}), "[B, 4]");
  EXPECT_EQ(attr_str(Shape{}), "[]");
}

TEST(Attr, Tensors) {
  EXPECT_EQ(attr_str(Tensor::from<float>(DType::kF32, {2, 2}, {1, 2, 3, 4})),
            "dense<f32[2,2]: [1.0, 2.0, 3.0, 4.0]>");
  // Each float prints at its own precision: 0.1f is not 0.1.
  EXPECT_EQ(attr_str(Tensor::from<float>(DType::kF32, {2}, {0.1f, -1.5e-8f})),
            "dense<f32[2]: [0.1, -1.5e-08]>");
  EXPECT_EQ(attr_str(Tensor::from<double>(DType::kF64, {1}, {0.1})), "dense<f64[1]: [0.1]>");
  EXPECT_EQ(attr_str(Tensor::from<uint16_t>(DType::kF16, {3}, {0x3C00, 0x2E66, 0x7C00})),
            "dense<f16[3]: [1.0, 0.099975586, inf]>");
  EXPECT_EQ(attr_str(Tensor::from<uint16_t>(DType::kBF16, {1}, {f32_to_bf16(3.0f)})),
            "dense<bf16[1]: [3.0]>");
  EXPECT_EQ(attr_str(Tensor::from<int32_t>(DType::kI32, {3}, {-1, 0, 7})),
            "dense<i32[3]: [-1, 0, 7]>");
  EXPECT_EQ(attr_str(Tensor::from<int8_t>(DType::kI8, {2}, {-128, 65})),
            "dense<i8[2]: [-128, 65]>");
  EXPECT_EQ(attr_str(Tensor::from<uint8_t>(DType::kU8, {1}, {200})), "dense<u8[1]: [200]>");
  EXPECT_EQ(attr_str(Tensor::from<uint8_t>(DType::kBool, {2}, {1, 0})),
            "dense<bool[2]: [true, false]>");
  using C = std::complex<float>;
  EXPECT_EQ(attr_str(Tensor::from<C>(DType::kC64, {2}, {C(1, 2), C(-0.5f, 0)})),
            "dense<c64[2]: [(1.0, 2.0), (-0.5, 0.0)]>");
  EXPECT_EQ(attr_str(Tensor(DType::kI64, {})), "dense<i64[]: [0]>");
  EXPECT_EQ(attr_str(Tensor(DType::kF32, {0, 3})), "dense<f32[0,3]: []>");
}

}  // namespace
}  // namespace rlx
