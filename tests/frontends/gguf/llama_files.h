// Small llama GGUF files written by tests: dense, Q8_0, and laid out like a Q4_K_M file. The gguf
// model tests run them; the CLI tests describe them with `rlx info`.
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gguf_writer.h"
#include "rlx/core/half.h"

namespace rlx::gguf::test {

// A tensor of a GGUF file written by a test: ggml dims and type, its bytes.
struct FileTensor {
  std::string name;
  std::vector<int64_t> ne;
  uint32_t type;
  std::string data;
};

struct LlamaDims {
  int64_t hidden, ff, heads, kv_heads, layers;
};

// A llama GGUF file holding `ts`.
inline std::string llama_file(const LlamaDims& d, const std::vector<FileTensor>& ts) {
  Bytes b = header(3, static_cast<int64_t>(ts.size()), 8);
  auto u32kv = [&](const char* k, int64_t v) { b.str(k).u32(4).u32(static_cast<uint32_t>(v)); };
  b.str("general.architecture").u32(8).str("llama");
  u32kv("llama.embedding_length", d.hidden);
  u32kv("llama.block_count", d.layers);
  u32kv("llama.attention.head_count", d.heads);
  u32kv("llama.attention.head_count_kv", d.kv_heads);
  u32kv("llama.feed_forward_length", d.ff);
  u32kv("llama.context_length", 64);
  b.str("llama.attention.layer_norm_rms_epsilon").u32(6).f32(1e-5f);
  uint64_t off = 0;
  for (const FileTensor& t : ts) {
    tensor_info(b, t.name, t.ne, t.type, off);
    off += (t.data.size() + 31) / 32 * 32;
  }
  b.pad_to(32);
  for (const FileTensor& t : ts) b.raw(t.data).pad_to(32);
  return b.str();
}

inline void put_f16(std::string& s, float v) {
  uint16_t h = f32_to_f16(v);
  s.append(reinterpret_cast<const char*>(&h), 2);
}

inline FileTensor f32_tensor(const std::string& name, int64_t n, std::mt19937& rng, float lo,
                             float hi) {
  std::uniform_real_distribution<float> g(lo, hi);
  std::string s;
  for (int64_t i = 0; i < n; ++i) {
    float v = g(rng);
    s.append(reinterpret_cast<const char*>(&v), 4);
  }
  return FileTensor{name, {n}, 0, s};
}

// A one-layer llama whose matrices are Q8_0 (embedding and output included), written here.
inline std::string quantized_llama_file() {
  const int64_t H = 64, FF = 128, V = 40, NH = 4, NKV = 2, HD = H / NH;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> q(-127, 127);
  std::uniform_real_distribution<float> d(0.002f, 0.02f);
  auto q8 = [&](const std::string& name, int64_t in, int64_t out) {
    std::string s;
    for (int64_t b = 0; b < in * out / 32; ++b) {
      put_f16(s, d(rng));
      for (int i = 0; i < 32; ++i) s += static_cast<char>(q(rng));
    }
    return FileTensor{name, {in, out}, 8, s};
  };
  auto norm = [&](const std::string& name) { return f32_tensor(name, H, rng, 0.5f, 1.5f); };
  std::vector<FileTensor> ts = {q8("token_embd.weight", H, V),
                                norm("blk.0.attn_norm.weight"),
                                q8("blk.0.attn_q.weight", H, NH * HD),
                                q8("blk.0.attn_k.weight", H, NKV * HD),
                                q8("blk.0.attn_v.weight", H, NKV * HD),
                                q8("blk.0.attn_output.weight", H, H),
                                norm("blk.0.ffn_norm.weight"),
                                q8("blk.0.ffn_gate.weight", H, FF),
                                q8("blk.0.ffn_up.weight", H, FF),
                                q8("blk.0.ffn_down.weight", FF, H),
                                norm("output_norm.weight"),
                                q8("output.weight", H, V)};
  return llama_file({H, FF, NH, NKV, 1}, ts);
}

// A two-layer llama laid out like a Q4_K_M file: Q4_K matrices, Q6_K for attn_v and ffn_down,
// a Q4_K embedding table that the head shares (no output.weight), and f32 biases on attn_v and
// ffn_down (DequantMatMul then Add). Blocks are random with scales picked so the weights are
// about +-0.1 and centred.
inline std::string q4_k_llama_file() {
  const int64_t H = 256, FF = 512, V = 48, NH = 4, NKV = 2, HD = H / NH;
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> byte(0, 255), scale6(-40, 40);
  std::uniform_real_distribution<float> d4(1e-4f, 2e-4f), d6(4e-5f, 8e-5f);
  // block_q4_K: d, dmin (f16), 12 bytes of packed 6-bit scales and mins, 128 bytes of nibbles;
  // x = d * sc * q - dmin * m, so dmin = 7.5 d centres the values.
  auto q4k = [&](const std::string& name, int64_t in, int64_t out) {
    std::string s;
    for (int64_t b = 0; b < in * out / 256; ++b) {
      const float d = d4(rng);
      put_f16(s, d);
      put_f16(s, 7.5f * d);
      for (int i = 0; i < 12 + 128; ++i) s += static_cast<char>(byte(rng));
    }
    return FileTensor{name, {in, out}, 12, s};
  };
  // block_q6_K: 128 bytes of low nibbles, 64 of high bits, 16 int8 scales, d (f16).
  auto q6k = [&](const std::string& name, int64_t in, int64_t out) {
    std::string s;
    for (int64_t b = 0; b < in * out / 256; ++b) {
      for (int i = 0; i < 128 + 64; ++i) s += static_cast<char>(byte(rng));
      for (int i = 0; i < 16; ++i) s += static_cast<char>(scale6(rng));
      put_f16(s, d6(rng));
    }
    return FileTensor{name, {in, out}, 14, s};
  };
  std::vector<FileTensor> ts = {q4k("token_embd.weight", H, V)};
  for (int64_t l = 0; l < 2; ++l) {
    auto n = [&](const char* what) { return fmt::format("blk.{}.{}", l, what); };
    ts.push_back(f32_tensor(n("attn_norm.weight"), H, rng, 0.5f, 1.5f));
    ts.push_back(q4k(n("attn_q.weight"), H, NH * HD));
    ts.push_back(q4k(n("attn_k.weight"), H, NKV * HD));
    ts.push_back(q6k(n("attn_v.weight"), H, NKV * HD));
    ts.push_back(f32_tensor(n("attn_v.bias"), NKV * HD, rng, -0.1f, 0.1f));
    ts.push_back(q4k(n("attn_output.weight"), H, H));
    ts.push_back(f32_tensor(n("ffn_norm.weight"), H, rng, 0.5f, 1.5f));
    ts.push_back(q4k(n("ffn_gate.weight"), H, FF));
    ts.push_back(q4k(n("ffn_up.weight"), H, FF));
    ts.push_back(q6k(n("ffn_down.weight"), FF, H));
    ts.push_back(f32_tensor(n("ffn_down.bias"), H, rng, -0.1f, 0.1f));
  }
  ts.push_back(f32_tensor("output_norm.weight", H, rng, 0.5f, 1.5f));
  return llama_file({H, FF, NH, NKV, 2}, ts);
}

}  // namespace rlx::gguf::test
