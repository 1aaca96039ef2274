#include "attention_text.h"

#include <fmt/format.h>

#include "rlx/core/error.h"

namespace rlx::cuda {

namespace {

// How operand 'q', 'k', 'v' or 'o' is laid out (AttentionShape::*_split_heads, *_row, *_offset).
struct OperandRows {
  bool split;
  int64_t heads, len, dim, stride, offset;
};

OperandRows operand_rows(const sdk::AttentionShape& s, char operand) {
  const bool kv = operand == 'k' || operand == 'v';
  OperandRows r{s.merge_heads,           kv ? s.kv_heads : s.heads,
                kv ? s.kv_len : s.q_len, operand == 'q' || operand == 'k' ? s.head_dim : s.v_dim,
                s.heads * s.v_dim,       0};
  if (operand == 'q') r.split = s.q_split_heads, r.stride = s.q_row_stride(), r.offset = s.q_offset;
  if (operand == 'k') r.split = s.k_split_heads, r.stride = s.k_row_stride(), r.offset = s.k_offset;
  if (operand == 'v') r.split = s.v_split_heads, r.stride = s.v_row_stride(), r.offset = s.v_offset;
  return r;
}

}  // namespace

std::string attention_row_offset(const sdk::AttentionShape& s, char operand,
                                 const std::string& row) {
  const OperandRows r = operand_rows(s, operand);
  const std::string head = operand == 'k' || operand == 'v' ? "hk" : "h";
  if (r.split)
    return fmt::format("({} + (b * {} + ({})) * {} + {} * {})", r.offset, r.len, row, r.stride,
                       head, r.dim);
  return fmt::format("((b * {} + {}) * {} + ({})) * {}", r.heads, head, r.len, row, r.dim);
}

int64_t attention_row_step(const sdk::AttentionShape& s, char operand) {
  const OperandRows r = operand_rows(s, operand);
  return r.split ? r.stride : r.dim;
}

std::string attention_mask_test(const sdk::AttentionShape& s) {
  if (s.mask == "causal") return fmt::format("(key > row + ({} - {}))", s.kv_len, s.q_len);
  if (s.mask != "padding") return "false";
  const std::string at =
      fmt::format("b{}[{} + key]", s.mask_buffer,
                  s.mask_batch == 1 ? std::string("0") : fmt::format("b * {}", s.mask_len));
  // 16-bit floats are stored as bits: zero is either sign of the zero pattern.
  if (s.mask_dtype == DType::kF16 || s.mask_dtype == DType::kBF16)
    return fmt::format("(({} & 0x7FFF) == 0)", at);
  return fmt::format("({} == 0)", at);
}

std::string attention_params(const sdk::AttentionShape& s) {
  std::map<int32_t, std::string> params;
  auto add = [&](int32_t position, DType dtype, bool written) {
    params[position] =
        fmt::format("{}{}* __restrict__ b{}", written ? "" : "const ",
                    sdk::cuda_dialect().storage_type[static_cast<size_t>(dtype)], position);
  };
  add(s.q_buffer, s.q_dtype, false);
  add(s.k_buffer, s.k_dtype, false);
  add(s.v_buffer, s.v_dtype, false);
  if (s.mask == "padding") add(s.mask_buffer, s.mask_dtype, false);
  add(s.out_buffer, s.out_dtype, true);
  // What computes q (AttentionShape::q_loop), after the attention's own parameters.
  for (int32_t j = static_cast<int32_t>(params.size()); s.q_loop && j < s.q_loop->params; ++j)
    add(j, s.q_loop->program.buffers.at(j).dtype, false);
  std::string list;
  for (int32_t j = 0; j < static_cast<int32_t>(params.size()); ++j) {
    if (!params.count(j)) throw_internal_error("cuda attention: buffer positions have a gap");
    list += (j ? ", " : "") + params[j];
  }
  return list;
}

std::string load_f32(DType dtype, const std::string& buffer, const std::string& at) {
  const std::string x = fmt::format("{}[{}]", buffer, at);
  if (dtype == DType::kF16) return "rlx_f16_to_f32(" + x + ")";
  if (dtype == DType::kBF16) return "rlx_bf16_to_f32(" + x + ")";
  return x;
}

std::string from_f32(DType dtype, const std::string& value) {
  if (dtype == DType::kF16) return "rlx_f32_to_f16(" + value + ")";
  if (dtype == DType::kBF16) return "rlx_f32_to_bf16(" + value + ")";
  return value;
}

std::map<std::string, std::string> attention_tokens(const sdk::AttentionShape& s) {
  return {{"SYM", sdk::kernel_symbol(s.name)},
          {"PARAMS", attention_params(s)},
          {"B", std::to_string(s.batch)},
          {"H", std::to_string(s.heads)},
          {"HKV", std::to_string(s.kv_heads)},
          {"SQ", std::to_string(s.q_len)},
          {"SK", std::to_string(s.kv_len)},
          {"D", std::to_string(s.head_dim)},
          {"DV", std::to_string(s.v_dim)},
          {"MASK", s.mask},
          {"MASKED", attention_mask_test(s)},
          {"SCALE", fmt::format("{:.9e}", s.scale)}};
}

std::string fill_tokens(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    const std::string token = "@" + key + "@";
    for (size_t at = text.find(token); at != std::string::npos; at = text.find(token, at)) {
      text.replace(at, token.size(), value);
      at += value.size();
    }
  }
  return text;
}

}  // namespace rlx::cuda
