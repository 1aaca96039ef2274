#include "c_family_index_library.h"

#include <fmt/format.h>

namespace rlx::gpu_host {

std::string CFamilyIndexLibrary::resolve_index(int32_t slot) const {
  const Words& w = words_;
  return fmt::format(R"(    const {i64} v = ({i64})ids[j];
    const {i64} r = v < 0 ? v + len : v;
    if (r < 0 || r >= len) {{
{claim}        status[{s1}] = (int)j;
        status[{s2}] = (int)({u32})(({u64})v & {mask});
        status[{s3}] = (int)({u32})(({u64})v >> 32);
      }}
)",
                     fmt::arg("i64", w.i64), fmt::arg("u32", w.u32), fmt::arg("u64", w.u64),
                     fmt::arg("mask", w.low_mask), fmt::arg("claim", claim_status(slot * 4)),
                     fmt::arg("s1", slot * 4 + 1), fmt::arg("s2", slot * 4 + 2),
                     fmt::arg("s3", slot * 4 + 3));
}

// The dialect's first statement of a kernel body, on its own line (render.h, kernel_entry).
std::string CFamilyIndexLibrary::body_entry() const {
  const std::string& e = dialect().kernel_entry;
  return e.empty() ? "" : "  " + e + "\n";
}

std::string CFamilyIndexLibrary::gather_source(const IndexCall& c) const {
  const Words& w = words_;
  const std::string head = signature(c.symbol, {{c.type, "src", false},
                                                {c.index_type, "ids", false},
                                                {c.type, "out", true},
                                                {"int", "status", true}});
  return fmt::format(R"(// {where}: one {word} per output element
{head} {{
{entry}  const {i64} gid = {gid};
  if (gid >= {n}{l}) {{ return; }}
  const {i64} len = {len}{l}, inner = {inner}{l}, nidx = {nidx}{l};
  const {i64} i = gid % inner, j = (gid / inner) % nidx, o = gid / (inner * nidx);
{resolve}      return;
    }}
  out[gid] = src[(o * len + r) * inner + i];
}}
)",
                     fmt::arg("where", c.where), fmt::arg("word", w.kernel_word),
                     fmt::arg("head", head), fmt::arg("entry", body_entry()), fmt::arg("i64", w.i64),
                     fmt::arg("gid", w.global_id),
                     fmt::arg("n", c.work_items), fmt::arg("l", w.i64_suffix),
                     fmt::arg("len", c.len), fmt::arg("inner", c.inner), fmt::arg("nidx", c.nidx),
                     fmt::arg("resolve", resolve_index(c.status_slot)));
}

std::string CFamilyIndexLibrary::scatter_source(const IndexCall& c) const {
  const Words& w = words_;
  const sdk::Dialect& d = dialect();
  // Computed updates (IndexCall::updates): the producer's statements for element src, whose
  // buffers are the first parameters, and its f32 value rounded to the stored dtype.
  std::vector<Param> params;
  std::string compute;
  if (c.updates) {
    for (int32_t j = 0; j < c.updates->params; ++j)
      params.push_back({entry(d.storage_type, c.updates->program.buffers.at(j).dtype, c),
                        fmt::format("b{}", j), false});
    compute = sdk::render_prologue(*c.updates, d, "src", "u", 2);
  }
  params.push_back({c.index_type, "ids", false});
  if (!c.updates) params.push_back({c.type, "upd", false});
  params.push_back({c.type, "out", true});
  params.push_back({"int", "status", true});
  std::string update =
      c.updates ? fmt::format("out[dst] = {};", apply(d.store, c.dtype, "u", c)) : "out[dst] = upd[src];";
  if (c.add) {
    const std::string a = apply(d.load, c.dtype, "out[dst]", c);
    const std::string b = c.updates ? std::string("u") : apply(d.load, c.dtype, "upd[src]", c);
    std::string sum = fmt::format("{} + {}", a, b);
    const std::string& wrap = d.wrap_type[static_cast<int>(c.dtype)];
    if (!wrap.empty())  // integers wrap, as the renderer's add does
      sum = fmt::format("({})(({}){} + ({}){})", entry(d.compute_type, c.dtype, c), wrap, a, wrap, b);
    update = fmt::format("out[dst] = {};", apply(d.store, c.dtype, sum, c));
  }
  const std::string head = signature(c.symbol, params);
  return fmt::format(R"(// {where}: one {word} per (outer, inner) position, indices in order{computed}
{head} {{
{entry}  const {i64} gid = {gid};
  if (gid >= {n}{l}) {{ return; }}
  const {i64} len = {len}{l}, inner = {inner}{l}, nidx = {nidx}{l};
  const {i64} i = gid % inner, o = gid / inner;
  for ({i64} j = 0; j < nidx; ++j) {{
{resolve}      continue;
    }}
    const {i64} dst = (o * len + r) * inner + i, src = (o * nidx + j) * inner + i;
{compute}    {update}
  }}
}}
)",
                     fmt::arg("where", c.where), fmt::arg("word", w.kernel_word),
                     fmt::arg("head", head), fmt::arg("entry", body_entry()), fmt::arg("i64", w.i64),
                     fmt::arg("gid", w.global_id),
                     fmt::arg("n", c.work_items), fmt::arg("l", w.i64_suffix),
                     fmt::arg("len", c.len), fmt::arg("inner", c.inner), fmt::arg("nidx", c.nidx),
                     fmt::arg("resolve", resolve_index(c.status_slot)), fmt::arg("update", update),
                     fmt::arg("compute", compute),
                     fmt::arg("computed", computed_note(c)));
}

}  // namespace rlx::gpu_host
