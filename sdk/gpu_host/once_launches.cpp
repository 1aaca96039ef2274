#include "once_launches.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace rlx::gpu_host {

namespace {

// Writers of each storage buffer over the whole program: a buffer written twice (an in-place
// update) is not a value that can be computed ahead.
std::vector<int> writers_of(const lir::Program& p) {
  std::vector<int> n(p.buffers.size(), 0);
  for (const lir::Kernel& k : p.kernels) {
    if (const auto* l = std::get_if<lir::LoopKernel>(&k)) {
      for (const lir::Store& st : l->stores) ++n[p.storage_of(st.buffer)];
    } else {
      for (int32_t b : std::get<lir::CallKernel>(k).outputs) ++n[p.storage_of(b)];
    }
  }
  return n;
}

}  // namespace

void mark_once_launches(const lir::Program& p, ModulePlan& plan) {
  if (const char* v = std::getenv("RLX_GPU_ONCE"); v && std::strcmp(v, "0") == 0) return;
  const std::vector<int> writers = writers_of(p);
  std::vector<bool> fixed(p.buffers.size(), false);
  for (const lir::Buffer& b : p.buffers) fixed[b.id] = b.kind == lir::BufferKind::kConstant;
  for (Step& s : plan.steps) {
    auto* l = std::get_if<Launch>(&s);
    if (!l || l->writes.empty() || !l->copies_before.empty() || l->status_slot >= 0 ||
        l->scratch_bytes > 0 || l->work_items == 0)
      continue;
    auto written = [&](int32_t b) {
      return std::find(l->writes.begin(), l->writes.end(), b) != l->writes.end();
    };
    const bool computable = std::all_of(l->buffers.begin(), l->buffers.end(), [&](int32_t b) {
      if (!written(b)) return static_cast<bool>(fixed[b]);
      return p.buffers[b].kind == lir::BufferKind::kTemp && writers[b] == 1;
    });
    if (!computable) continue;
    l->once = true;
    for (int32_t b : l->writes) fixed[b] = true;
  }
}

}  // namespace rlx::gpu_host
