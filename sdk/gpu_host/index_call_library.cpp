#include "index_call_library.h"

#include <fmt/format.h>

#include "rlx/core/error.h"

namespace rlx::gpu_host {

namespace {

int64_t product(std::vector<int64_t>::const_iterator a, std::vector<int64_t>::const_iterator b) {
  int64_t p = 1;
  for (; a != b; ++a) p *= *a;
  return p;
}

std::string where(const lir::CallKernel& c) {
  return c.loc.empty() ? c.callee : fmt::format("{} ('{}')", c.callee, c.loc);
}

}  // namespace

bool IndexCallLibrary::has_call(const std::string& callee) const { return callee == "gather" || callee == "scatter"; }

const std::string& IndexCallLibrary::entry(const sdk::DTypeTable& t, DType dt, const std::string& at) const {
  const std::string& s = t[static_cast<int>(dt)];
  if (s.empty()) throw Error(ErrorKind::kCompile, fmt::format("{}: {} has no type for {}", at, language_, dtype_name(dt)));
  return s;
}

const std::string& IndexCallLibrary::entry(const sdk::DTypeTable& t, DType dt, const IndexCall& c) const {
  return entry(t, dt, c.where);
}

std::string IndexCallLibrary::computed_note(const IndexCall& c) {
  return c.updates ? ", updates computed by " + sdk::computed_by(*c.updates) : "";
}

std::string IndexCallLibrary::apply(const sdk::DTypeTable& t, DType dt, const std::string& x, const IndexCall& c) const {
  return fmt::format(fmt::runtime(entry(t, dt, c)), fmt::arg("x", x));
}

NativeKernel IndexCallLibrary::call_kernel(const lir::CallKernel& c, const lir::Program& p, int32_t index,
                                           int32_t slot, const ComputedUpdates* updates) const {
  const sdk::Dialect& d = dialect();
  const lir::Buffer& operand = p.buffers.at(c.inputs.at(0));
  const lir::Buffer& ids = p.buffers.at(c.inputs.at(1));
  const std::string at = where(c);
  if (!is_integer(ids.dtype))
    throw Error(ErrorKind::kCompile, fmt::format("{}: indices are {}, not an integer type", at, dtype_name(ids.dtype)));
  const std::string& type = entry(d.storage_type, operand.dtype, at);
  const std::string& index_type = entry(d.storage_type, ids.dtype, at);
  const auto& s = operand.shape;
  int64_t axis = std::get<int64_t>(c.attrs.at("axis"));
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  if (axis < 0 || axis >= static_cast<int64_t>(s.size()))
    throw Error(ErrorKind::kCompile, fmt::format("{}: axis out of range", at));
  const bool gather = c.callee == "gather";
  const bool add = !gather && c.attrs.count("reduce") && std::get<std::string>(c.attrs.at("reduce")) == "add";
  if (add && operand.dtype == DType::kBool)
    throw Error(ErrorKind::kCompile, fmt::format("{}: scatter-add is not defined on bool", at));
  IndexCall call{c,
                 fmt::format("k{}_{}", index, c.callee),
                 at,
                 operand.dtype,
                 ids.dtype,
                 type,
                 index_type,
                 product(s.begin(), s.begin() + axis),
                 s[axis],
                 product(s.begin() + axis + 1, s.end()),
                 ids.numel(),
                 0,
                 slot,
                 add};
  call.work_items = gather ? call.outer * call.nidx * call.inner : call.outer * call.inner;
  if (updates && (gather || !computes_updates()))
    throw Error(ErrorKind::kCompile, fmt::format("{}: the {} kernel takes no computed operand", at, language_));
  if (updates) call.updates = updates->prologue.get();
  NativeKernel k;
  k.symbol = call.symbol;
  k.checks_indices = true;
  k.where = at;
  k.axis_size = call.len;
  k.work_items = call.work_items;
  int32_t out = p.storage_of(c.outputs.at(0));
  if (gather) {
    k.buffers = {p.storage_of(c.inputs[0]), p.storage_of(c.inputs[1]), out};
    k.source = gather_source(call);
  } else {
    k.buffers = {p.storage_of(c.inputs[1]), p.storage_of(c.inputs[2]), out};
    if (updates) {  // what computes the updates, then the indices and the output
      k.buffers = updates->buffers;
      k.buffers.push_back(p.storage_of(c.inputs[1]));
      k.buffers.push_back(out);
    }
    k.copies_before = {{p.storage_of(c.inputs[0]), out}};
    k.source = scatter_source(call);
  }
  return k;
}

}  // namespace rlx::gpu_host
