#include "attention_form.h"

#include <fmt/format.h>

#include <cmath>

#include "rlx/core/error.h"

namespace rlx::gpu_host {

AttentionCall attention_call(const lir::CallKernel& c, const lir::Program& p,
                             const std::string& name) {
  AttentionCall a;
  sdk::AttentionShape& s = a.shape;
  s.name = name;
  auto position = [&](int32_t buffer) {
    const int32_t storage = p.storage_of(buffer);
    for (size_t j = 0; j < a.buffers.size(); ++j)
      if (a.buffers[j] == storage) return static_cast<int32_t>(j);
    a.buffers.push_back(storage);
    return static_cast<int32_t>(a.buffers.size() - 1);
  };
  const lir::Buffer &q = p.buffers.at(c.inputs.at(0)), &k = p.buffers.at(c.inputs.at(1)),
                    &v = p.buffers.at(c.inputs.at(2)), &o = p.buffers.at(c.outputs.at(0));
  if (q.shape.size() != 4 || k.shape.size() != 4 || v.shape.size() != 4 || o.shape.size() != 4)
    throw_internal_error(
        fmt::format("{} ('{}'): attention operands are not rank 4", c.callee, c.loc));
  s.batch = q.shape[0], s.heads = q.shape[1], s.q_len = q.shape[2], s.head_dim = q.shape[3];
  s.kv_heads = k.shape[1], s.kv_len = k.shape[2], s.v_dim = v.shape[3];
  s.q_dtype = q.dtype, s.k_dtype = k.dtype, s.v_dtype = v.dtype, s.out_dtype = o.dtype;
  s.q_buffer = position(c.inputs[0]);
  s.k_buffer = position(c.inputs[1]);
  s.v_buffer = position(c.inputs[2]);
  s.out_buffer = position(c.outputs[0]);
  if (auto it = c.attrs.find("mask"); it != c.attrs.end())
    s.mask = std::get<std::string>(it->second);
  s.scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  if (auto it = c.attrs.find("scale"); it != c.attrs.end())
    s.scale = std::holds_alternative<double>(it->second)
                  ? std::get<double>(it->second)
                  : static_cast<double>(std::get<int64_t>(it->second));
  if (s.mask == "padding") {
    const lir::Buffer& m = p.buffers.at(c.inputs.at(3));
    s.mask_dtype = m.dtype;
    s.mask_batch = m.shape.at(0), s.mask_len = m.shape.at(1);
    s.mask_buffer = position(c.inputs[3]);
  }
  return a;
}

}  // namespace rlx::gpu_host
