#include "norm_form.h"

#include <fmt/format.h>

#include <variant>

#include "rlx/core/error.h"

namespace rlx::gpu_host {

NormCall norm_call(const lir::CallKernel& c, const lir::Program& p, const std::string& name) {
  NormCall call;
  sdk::NormShape& s = call.shape;
  s.name = name;
  s.rms = c.callee == "native:RMSNorm";
  auto position = [&](int32_t buffer) {
    const int32_t storage = p.storage_of(buffer);
    for (size_t j = 0; j < call.buffers.size(); ++j)
      if (call.buffers[j] == storage) return static_cast<int32_t>(j);
    call.buffers.push_back(storage);
    return static_cast<int32_t>(call.buffers.size() - 1);
  };
  const lir::Buffer& x = p.buffers.at(c.inputs.at(0));
  if (x.shape.empty())
    throw_internal_error(fmt::format("{} ('{}'): a norm of a scalar", c.callee, c.loc));
  s.n = x.shape.back();
  s.rows = s.n ? x.numel() / s.n : 0;
  s.epsilon = s.rms ? 1e-6 : 1e-5;
  if (auto it = c.attrs.find("epsilon"); it != c.attrs.end())
    s.epsilon = std::holds_alternative<double>(it->second)
                    ? std::get<double>(it->second)
                    : static_cast<double>(std::get<int64_t>(it->second));
  auto dtype = [&](int32_t buffer) { return p.buffers.at(p.storage_of(buffer)).dtype; };
  s.x_buffer = position(c.inputs[0]);
  s.x_dtype = dtype(c.inputs[0]);
  if (c.inputs.size() > 1) {
    s.scale_buffer = position(c.inputs[1]);
    s.scale_dtype = dtype(c.inputs[1]);
  }
  if (c.inputs.size() > 2) {
    s.bias_buffer = position(c.inputs[2]);
    s.bias_dtype = dtype(c.inputs[2]);
  }
  s.out_buffer = position(c.outputs.at(0));
  s.out_dtype = dtype(c.outputs[0]);
  return call;
}

}  // namespace rlx::gpu_host
