// u16, u32 and u64 on the cpu target. u16/u32 compute in the int64 class like the other
// integers, wrapped to their width after every op; u64 is moved (its 64 bits copied by index
// maps, concat, pad, select, gather) but never computed on, and the refusal says so. Expected
// values are written by hand from modular arithmetic.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "rlx/core/error.h"
#include "test_support.h"

namespace rlx {
namespace {

using test::run_text;

template <typename T>
std::vector<T> raw(const Tensor& t) {
  return std::vector<T>(t.as<T>(), t.as<T>() + t.numel());
}

TEST(CpuUnsigned, U32ArithmeticWrapsAndComparesUnsigned) {
  auto out = run_text(
      "graph @t(%a: u32[3], %b: u32[3]) {\n"
      "  %s = add(%a, %b) : u32[3]\n"
      "  %d = sub(%b, %a) : u32[3]\n"
      "  %q = div(%a, %b) : u32[3]\n"
      "  %l = lt(%b, %a) : bool[3]\n"
      "  return %s, %d, %q, %l\n}\n",
      {{"a", Tensor::from<uint32_t>(DType::kU32, {3}, {4294967295u, 7u, 3000000000u})},
       {"b", Tensor::from<uint32_t>(DType::kU32, {3}, {1u, 2u, 1000000000u})}});
  EXPECT_EQ(raw<uint32_t>(out.at("s")), (std::vector<uint32_t>{0u, 9u, 4000000000u}));
  EXPECT_EQ(raw<uint32_t>(out.at("d")), (std::vector<uint32_t>{2u, 4294967291u, 2294967296u}));
  EXPECT_EQ(raw<uint32_t>(out.at("q")), (std::vector<uint32_t>{4294967295u, 3u, 3u}));
  EXPECT_EQ(raw<uint8_t>(out.at("l")), (std::vector<uint8_t>{1, 1, 1}));
}

TEST(CpuUnsigned, U16MulWrapsAndWidensExactly) {
  auto out = run_text(
      "graph @t(%a: u16[2]) {\n"
      "  %m = mul(%a, %a) : u16[2]\n"
      "  %w = convert(%a) {dtype = i32} : i32[2]\n"
      "  return %m, %w\n}\n",
      {{"a", Tensor::from<uint16_t>(DType::kU16, {2}, {65535, 300})}});
  EXPECT_EQ(raw<uint16_t>(out.at("m")), (std::vector<uint16_t>{1, 24464}));  // 90000 mod 65536
  EXPECT_EQ(raw<int32_t>(out.at("w")), (std::vector<int32_t>{65535, 300}));
}

TEST(CpuUnsigned, U64IsMovedBitExactly) {
  const uint64_t big = 18446744073709551615ull, high = 9223372036854775809ull;
  auto out = run_text(
      "graph @t(%x: u64[2,2]) {\n"
      "  %c = constant() {value = dense<u64[2]: [18446744073709551614, 5]>} : u64[2]\n"
      "  %t = transpose(%x) {perm = [1, 0]} : u64[2,2]\n"
      "  %r = reshape(%t) {shape = [4]} : u64[4]\n"
      "  %y = concat(%r, %c) {axis = 0} : u64[6]\n"
      "  return %y\n}\n",
      {{"x", Tensor::from<uint64_t>(DType::kU64, {2, 2}, {big, 1, high, 3})}});
  EXPECT_EQ(raw<uint64_t>(out.at("y")),
            (std::vector<uint64_t>{big, high, 1, 3, 18446744073709551614ull, 5}));
}

TEST(CpuUnsigned, U64ArithmeticIsRefusedWithTheReason) {
  try {
    run_text("graph @t(%a: u64[2]) {\n  %y = add(%a, %a) : u64[2]\n  return %y\n}\n",
             {{"a", Tensor::from<uint64_t>(DType::kU64, {2}, {1, 2})}});
    FAIL() << "u64 add must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not compute on them"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rlx
