// The GGUF reader on llama.cpp's own files and on files built to be wrong in one way each.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "gguf_reader.h"
#include "gguf_writer.h"
#include "rlx/core/error.h"
#include "rlx/core/quant.h"

namespace rlx::gguf {
namespace {

namespace fs = std::filesystem;
using test::Bytes;
using test::header;
using test::tensor_info;

fs::path gguf_dir() {
  return fs::path(RLX_GGUF_CONFORMANCE_DIR);
}

#define REQUIRE_CONFORMANCE_DATA()       \
  if (!fs::exists(gguf_dir())) \
  GTEST_SKIP() << "no conformance data at " << gguf_dir() << ""

// The GgufFile views its bytes, so it owns a copy: tests parse temporaries (`parse(good_file())`)
// and read tensors afterwards, which read freed memory under ASan before the copy.
GgufFile parse(const Bytes& b, ParseOptions o = {}) {
  auto owned = std::make_shared<const std::string>(b.str());
  auto* p = reinterpret_cast<const uint8_t*>(owned->data());
  return parse_gguf({p, owned->size()}, "test.gguf", o, owned);
}

// The message of the rlx::Error that parsing `b` throws ("" when it does not throw).
std::string error_of(const Bytes& b) {
  try {
    parse(b);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUser);
    return e.what();
  }
  return "";
}

#define EXPECT_REJECTED(bytes, ...)                                                       \
  do {                                                                                    \
    std::string msg = error_of(bytes);                                                    \
    EXPECT_NE(msg, "") << "accepted";                                                     \
    EXPECT_NE(msg.find("test.gguf"), std::string::npos) << msg;                           \
    for (const char* part : {__VA_ARGS__})                                                \
      EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg; \
  } while (0)

// --- llama.cpp's files ------------------------------------------------------------------------

TEST(GgufReader, VocabOnlyFiles) {
  REQUIRE_CONFORMANCE_DATA();
  GgufFile spm = read_gguf(gguf_dir() / "ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(spm.version, 3u);
  EXPECT_EQ(spm.kv.size(), 22u);
  EXPECT_TRUE(spm.tensors.empty());
  EXPECT_EQ(spm.alignment, 32u);
  EXPECT_EQ(*spm.find("general.architecture")->as_string(), "llama");
  const Value* tokens = spm.find("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->elem, ValueType::kString);
  EXPECT_EQ(tokens->strings.size(), 32000u);
  EXPECT_EQ(tokens->strings[1], "<s>");
  EXPECT_EQ(spm.find("tokenizer.ggml.scores")->floats.size(), 32000u);
  EXPECT_EQ(spm.find("tokenizer.ggml.token_type")->ints.size(), 32000u);
  EXPECT_EQ(spm.find("tokenizer.ggml.add_bos_token")->as_bool(), true);
  EXPECT_NEAR(*spm.find("llama.attention.layer_norm_rms_epsilon")->as_float(), 1e-5, 1e-9);

  GgufFile bert = read_gguf(gguf_dir() / "ggml-vocab-bert-bge.gguf");
  EXPECT_EQ(bert.kv.size(), 20u);
  EXPECT_EQ(bert.find("tokenizer.ggml.tokens")->strings.size(), 30522u);
  EXPECT_EQ(bert.find("bert.attention.causal")->as_bool(), false);
}

TEST(GgufReader, ModelFilesV2AndV3) {
  REQUIRE_CONFORMANCE_DATA();
  GgufFile tiny = read_gguf(gguf_dir() / "llama-2-tiny-random.gguf");
  EXPECT_EQ(tiny.version, 3u);
  ASSERT_EQ(tiny.tensors.size(), 12u);
  const TensorInfo* q = tiny.tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type->name, "f16");
  EXPECT_EQ(q->shape(), (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(tiny.tensor("token_embd.weight")->shape(), (std::vector<int64_t>{32000, 8}));

  GgufFile stories = read_gguf(gguf_dir() / "tinyllamas-stories-260k-q8_0.gguf",
                               ParseOptions{.allow_partial_blocks = true});
  EXPECT_EQ(stories.version, 2u);
  ASSERT_EQ(stories.tensors.size(), 48u);
  int q8 = 0, f32 = 0, partial = 0;
  for (const TensorInfo& t : stories.tensors) {
    q8 += t.type->name == "q8_0";
    f32 += t.type->name == "f32";
    partial += !t.problem.empty();
  }
  EXPECT_EQ(q8, 37);
  EXPECT_EQ(f32, 11);
  EXPECT_EQ(partial, 5);
}

// llama.cpp refuses the stories260K file: five ffn_down tensors have 172-element rows, not a
// whole number of 32-element Q8_0 blocks. So does rlx, naming every one of them.
TEST(GgufReader, RejectsRowsOfPartialBlocksNamingEachTensor) {
  REQUIRE_CONFORMANCE_DATA();
  fs::path path = gguf_dir() / "tinyllamas-stories-260k-q8_0.gguf";
  try {
    read_gguf(path);
    FAIL() << "accepted";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("5 tensors have rows"), std::string::npos) << msg;
    for (int b = 0; b < 5; ++b)
      EXPECT_NE(msg.find(fmt::format("'blk.{}.ffn_down.weight'", b)), std::string::npos) << msg;
    EXPECT_NE(msg.find("172 elements per row, q8_0 blocks of 32"), std::string::npos) << msg;
  }
  // Read leniently, the bad tensors still refuse to give their bytes.
  GgufFile f = read_gguf(path, ParseOptions{.allow_partial_blocks = true});
  try {
    f.bytes(*f.tensor("blk.3.ffn_down.weight"));
    FAIL() << "gave the bytes of a tensor of partial blocks";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.3.ffn_down.weight"), std::string::npos) << e.what();
  }
}

// Every readable tensor of the conformance files, decoded by rlx, against the sums and values
// the gguf package (llama.cpp's Python reader) gives: data/make_tensor_stats.py.
TEST(GgufReader, RealTensorsDecodeAsGgufPyDecodesThem) {
  REQUIRE_CONFORMANCE_DATA();
  std::ifstream stats(fs::path(RLX_GGUF_TEST_DATA) / "tensor_stats.txt");
  ASSERT_TRUE(stats) << "tensor_stats.txt missing";
  std::map<std::string, GgufFile> files;
  std::string line;
  int checked = 0;
  while (std::getline(stats, line)) {
    std::istringstream in(line);
    std::string file, name, type;
    int64_t n;
    double sum, sumsq, picks[4];
    in >> file >> name >> type >> n >> sum >> sumsq >> picks[0] >> picks[1] >> picks[2] >> picks[3];
    if (!files.count(file))
      files.emplace(file, read_gguf(gguf_dir() / file, ParseOptions{.allow_partial_blocks = true}));
    const GgufFile& f = files.at(file);
    const TensorInfo* t = f.tensor(name);
    ASSERT_NE(t, nullptr) << name;
    ASSERT_EQ(t->type->name, type);
    ASSERT_EQ(t->numel, n);
    auto bytes = f.bytes(*t);
    std::vector<float> v(n);
    quant::dequantize(*t->type->quant, bytes.data(), v.data(), n);
    double s = 0, ss = 0;
    for (float x : v) s += x, ss += static_cast<double>(x) * x;
    EXPECT_NEAR(s, sum, 1e-6 * std::max(1.0, std::abs(sumsq))) << file << " " << name;
    EXPECT_NEAR(ss, sumsq, 1e-6 * std::max(1.0, sumsq)) << file << " " << name;
    int64_t at[4] = {0, 1, n / 2, n - 1};
    for (int k = 0; k < 4; ++k)
      EXPECT_EQ(v[at[k]], picks[k]) << file << " " << name << "[" << at[k] << "]";
    ++checked;
  }
  EXPECT_EQ(checked, 12 + 43);  // llama-2-tiny-random: all 12; stories260K: 48 less 5
}

// --- built files ------------------------------------------------------------------------------

// A well-formed file: every value type, an array of arrays, alignment 64, two tensors.
Bytes good_file(uint32_t version = 3) {
  Bytes b = header(version, 2, 14);
  b.str("k.u8").u32(0).u8(200);
  b.str("k.i8").u32(1).put<int8_t>(-5);
  b.str("k.u16").u32(2).put<uint16_t>(60000);
  b.str("k.i16").u32(3).put<int16_t>(-30000);
  b.str("k.u32").u32(4).u32(4000000000u);
  b.str("k.i32").u32(5).put<int32_t>(-7);
  b.str("k.f32").u32(6).f32(0.5f);
  b.str("k.bool").u32(7).u8(1);
  b.str("k.str").u32(8).str("hello");
  b.str("k.u64").u32(10).u64(1ull << 40);
  b.str("k.i64").u32(11).i64(-(1ll << 40));
  b.str("k.f64").u32(12).put<double>(-2.25);
  b.str("k.arr").u32(9).u32(9).u64(2);   // array of 2 arrays
  b.u32(4).u64(3).u32(1).u32(2).u32(3);  // [1, 2, 3] u32
  b.u32(8).u64(1).str("x");              // ["x"]
  b.str("general.alignment").u32(4).u32(64);
  tensor_info(b, "a", {4, 2}, 0, 0);  // f32 [2, 4]: 32 bytes, padded to 64
  tensor_info(b, "b", {32}, 8, 64);   // one q8_0 block: 34 bytes
  b.pad_to(64);
  for (int i = 0; i < 8; ++i) b.f32(static_cast<float>(i));
  b.pad_to(64);
  b.put<uint16_t>(0x3C00);  // d = 1
  for (int i = 0; i < 32; ++i) b.put<int8_t>(static_cast<int8_t>(i - 16));
  return b;
}

TEST(GgufReader, EveryValueTypeAlignmentAndData) {
  for (uint32_t version : {2u, 3u}) {
    GgufFile f = parse(good_file(version));
    EXPECT_EQ(f.version, version);
    EXPECT_EQ(f.find("k.u8")->as_int(), 200);
    EXPECT_EQ(f.find("k.i8")->as_int(), -5);
    EXPECT_EQ(f.find("k.u16")->as_int(), 60000);
    EXPECT_EQ(f.find("k.i16")->as_int(), -30000);
    EXPECT_EQ(f.find("k.u32")->as_int(), 4000000000ll);
    EXPECT_EQ(f.find("k.i32")->as_int(), -7);
    EXPECT_EQ(f.find("k.f32")->as_float(), 0.5);
    EXPECT_EQ(f.find("k.bool")->as_bool(), true);
    EXPECT_EQ(*f.find("k.str")->as_string(), "hello");
    EXPECT_EQ(f.find("k.u64")->as_int(), 1ll << 40);
    EXPECT_EQ(f.find("k.i64")->as_int(), -(1ll << 40));
    EXPECT_EQ(f.find("k.f64")->as_float(), -2.25);
    const Value* arr = f.find("k.arr");
    ASSERT_EQ(arr->arrays.size(), 2u);
    EXPECT_EQ(arr->arrays[0].ints, (std::vector<int64_t>{1, 2, 3}));
    EXPECT_EQ(arr->arrays[1].strings, (std::vector<std::string>{"x"}));
    EXPECT_EQ(arr->str(), "[[1, 2, 3], [\"x\"]]");
    EXPECT_EQ(f.alignment, 64u);
    EXPECT_EQ(f.data_offset % 64, 0u);
    auto a = f.bytes(*f.tensor("a"));
    ASSERT_EQ(a.size(), 32u);
    float a7;
    std::memcpy(&a7, a.data() + 28, 4);
    EXPECT_EQ(a7, 7.0f);
    auto blk = f.bytes(*f.tensor("b"));
    std::vector<float> y(32);
    quant::dequantize(quant::QType::kQ8_0, blk.data(), y.data(), 32);
    EXPECT_EQ(y[0], -16.f);
    EXPECT_EQ(y[31], 15.f);
  }
}

TEST(GgufReader, EveryTruncationIsAnErrorNeverACrash) {
  const Bytes full = good_file();
  for (size_t n = 0; n < full.size(); ++n) {
    Bytes cut;
    cut.raw(full.str().substr(0, n));
    std::string msg = error_of(cut);
    EXPECT_NE(msg, "") << "a file cut to " << n << " of " << full.size() << " bytes was accepted";
  }
}

TEST(GgufReader, HeaderErrors) {
  EXPECT_REJECTED(Bytes().raw("GGML...."), "not a GGUF file");
  EXPECT_REJECTED(header(1, 0, 0), "version 1 is not supported");
  EXPECT_REJECTED(header(4, 0, 0), "version 4 is not supported");
  EXPECT_REJECTED(header(0x03000000, 0, 0), "big-endian");
  EXPECT_REJECTED(header(3, -1, 0), "tensor count -1 is negative");
  EXPECT_REJECTED(header(3, 0, 1ll << 40), "claims 1099511627776 entries");
  EXPECT_REJECTED(header(3, 1ll << 40, 0), "claims 1099511627776 entries");
}

TEST(GgufReader, MetadataErrors) {
  Bytes dup = header(3, 0, 2);
  dup.str("k").u32(4).u32(1).str("k").u32(4).u32(2);
  EXPECT_REJECTED(dup, "metadata key 'k'", "appears twice");
  Bytes bad_type = header(3, 0, 1);
  bad_type.str("k").u32(13).u32(0);
  EXPECT_REJECTED(bad_type, "metadata key 'k'", "13 is not a GGUF value type");
  Bytes long_string = header(3, 0, 1);
  long_string.str("k").u32(8).u64(1000).raw("abc");
  EXPECT_REJECTED(long_string, "metadata key 'k'", "claims 1000 bytes");
  Bytes huge_array = header(3, 0, 1);
  huge_array.str("k").u32(9).u32(6).u64(1ull << 62).f32(1);
  EXPECT_REJECTED(huge_array, "metadata key 'k'", "array claims");
  Bytes deep = header(3, 0, 1);
  deep.str("k").u32(9);
  for (int i = 0; i < 6; ++i) deep.u32(9).u64(1);
  EXPECT_REJECTED(deep, "nested deeper");
  for (auto [value, type] : {std::pair<uint64_t, uint32_t>{48, 4}, {0, 4}}) {
    Bytes align = header(3, 0, 1);
    align.str("general.alignment").u32(type).u32(static_cast<uint32_t>(value));
    EXPECT_REJECTED(align, "general.alignment must be a nonzero power of two");
  }
  Bytes align_str = header(3, 0, 1);
  align_str.str("general.alignment").u32(8).str("32");
  EXPECT_REJECTED(align_str, "general.alignment must be a nonzero power of two");
}

Bytes one_tensor(const std::string& name, std::vector<int64_t> ne, uint32_t type, uint64_t offset,
                 size_t data_bytes) {
  Bytes b = header(3, 1, 0);
  tensor_info(b, name, ne, type, offset);
  b.pad_to(32);
  b.raw(std::string(data_bytes, '\0'));
  return b;
}

TEST(GgufReader, TensorErrors) {
  EXPECT_NO_THROW(parse(one_tensor("w", {4, 2}, 0, 0, 32)));
  EXPECT_REJECTED(one_tensor("w", {4, 2}, 0, 0, 31), "tensor 'w'", "file has");
  EXPECT_REJECTED(one_tensor("w", {4, 2}, 0, 32, 64), "tensor 'w' has data offset 32, expected 0");
  EXPECT_REJECTED(one_tensor("w", {1, 1, 1, 1, 1}, 0, 0, 4), "tensor 'w'", "5 dimensions");
  EXPECT_REJECTED(one_tensor("w", {4, -2}, 0, 0, 32), "tensor 'w'", "negative");
  EXPECT_REJECTED(one_tensor("w", {1ll << 40, 1ll << 40}, 0, 0, 32), "tensor 'w'", "overflows");
  EXPECT_REJECTED(one_tensor("w", {4}, 4, 0, 32), "tensor 'w'",
                  "type id 4 is not a ggml tensor type");
  EXPECT_REJECTED(one_tensor("w", {4}, 99, 0, 32), "type id 99");
  EXPECT_REJECTED(one_tensor(std::string(64, 'n'), {4}, 0, 0, 16), "name is 64 bytes long");
  EXPECT_REJECTED(one_tensor("w", {48}, 8, 0, 68), "'w' (48 elements per row, q8_0 blocks of 32)");
  Bytes dup = header(3, 2, 0);
  tensor_info(dup, "w", {4}, 0, 0);
  tensor_info(dup, "w", {4}, 0, 32);
  dup.pad_to(32).raw(std::string(64, '\0'));
  EXPECT_REJECTED(dup, "tensor 'w' appears twice");
  // A type rlx cannot decode is readable as a file, and refused when the tensor is used.
  GgufFile f = parse(one_tensor("w", {256}, 16, 0, 66));
  EXPECT_NE(f.tensor("w")->problem.find("iq2_xxs has no decoder"), std::string::npos);
  EXPECT_THROW(f.bytes(*f.tensor("w")), Error);
}

}  // namespace
}  // namespace rlx::gguf
