#include "es_module.h"

#include <fmt/format.h>

#include <fstream>

#include "rlx/core/error.h"
#include "rlx/core/json.h"
#include "rlx/sdk/legality.h"

namespace rlx::webgpu {

namespace {

// The runtime half of model.mjs: everything but the `plan` constant, which precedes it.
constexpr const char* kRuntime = R"JS(
const kernelsUrl = new URL('webgpu_kernels.wgsl', import.meta.url);
const weightsUrl = new URL('weights.bin', import.meta.url);
const GROUP = 64;
const round4 = (n) => (n + 3) & ~3;
// c64 travels as interleaved (real, imaginary) f32 pairs.
const arrayTypes = {
  f32: Float32Array, i32: Int32Array, f16: Uint16Array, bf16: Uint16Array, bool: Uint8Array,
  i64: BigInt64Array, f64: Float64Array, u32: Uint32Array, c64: Float32Array,
};

let ready = null;

async function fetchOk(url, what) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`rlx webgpu: cannot fetch ${what} (${url}): HTTP ${r.status}`);
  return r;
}

async function init(device) {
  if (plan.unsupported) throw new Error(`rlx webgpu: ${plan.unsupported}`);
  if (!device) {
    if (!globalThis.navigator || !navigator.gpu) throw new Error('rlx webgpu: this browser has no WebGPU (navigator.gpu)');
    const adapter = await navigator.gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (!adapter) throw new Error('rlx webgpu: navigator.gpu.requestAdapter() found no adapter');
    const l = adapter.limits;
    device = await adapter.requestDevice({ requiredLimits: {
      maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
      maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
      maxBufferSize: l.maxBufferSize,
    } });
  }
  const source = await (await fetchOk(kernelsUrl, 'the kernels')).text();
  const weights = plan.weightBytes ? new Uint8Array(await (await fetchOk(weightsUrl, 'the weights')).arrayBuffer()) : null;
  const marker = '//@rlx-kernel ';
  const first = source.indexOf(marker);
  const prelude = source.slice(0, first);
  const pipelines = new Map();
  for (let at = first; at >= 0;) {
    const nameEnd = source.indexOf('\n', at);
    const symbol = source.slice(at + marker.length, nameEnd);
    const next = source.indexOf(marker, nameEnd);
    const code = prelude + source.slice(nameEnd + 1, next < 0 ? undefined : next);
    device.pushErrorScope('validation');
    const module = device.createShaderModule({ label: symbol, code });
    const info = await module.getCompilationInfo();
    const errors = info.messages.filter((m) => m.type === 'error');
    if (errors.length)
      throw new Error(`rlx webgpu: kernel ${symbol} does not compile: ` +
                      errors.map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`).join('; '));
    const pipeline = device.createComputePipeline({ label: symbol, layout: 'auto', compute: { module, entryPoint: symbol } });
    const err = await device.popErrorScope();
    if (err) throw new Error(`rlx webgpu: kernel ${symbol}: ${err.message}`);
    pipelines.set(symbol, pipeline);
    at = next;
  }
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const gpu = [];
  for (const b of plan.buffers) {
    if (b.storage !== b.id) continue;
    gpu[b.id] = device.createBuffer({ label: b.name, size: Math.max(16, round4(b.bytes)), usage });
    if (b.kind === 'constant' && b.bytes > 0)
      device.queue.writeBuffer(gpu[b.id], 0, weights, b.offset, round4(b.bytes));
  }
  const status = plan.checks.length
    ? device.createBuffer({ label: 'status', size: plan.checks.length * 16, usage }) : null;
  const groups = plan.steps.map((s) => s.workItems ? device.createBindGroup({
    layout: pipelines.get(s.symbol).getBindGroupLayout(0),
    entries: [...s.buffers.map((id) => gpu[id]), ...(s.status >= 0 ? [status] : [])]
      .map((buffer, binding) => ({ binding, resource: { buffer } })),
  }) : null);
  return { device, pipelines, gpu, status, groups };
}

// Runs the model: `inputs` maps each input name to a typed array of its bytes; resolves to the
// outputs by name. options.device: a GPUDevice to use instead of requesting one.
export async function run(inputs, options = {}) {
  if (!ready) ready = init(options.device);
  const { device, pipelines, gpu, status, groups } = await ready;
  const bytesOf = (id) => plan.buffers[id].bytes;
  for (const [name, id] of plan.inputs) {
    const a = inputs[name];
    if (!a || !ArrayBuffer.isView(a)) throw new Error(`rlx webgpu: input ${name} is missing (a typed array)`);
    if (a.byteLength !== bytesOf(id))
      throw new Error(`rlx webgpu: input ${name} has ${a.byteLength} bytes, the model takes ${bytesOf(id)} (${plan.buffers[id].dtype}[${plan.buffers[id].shape}])`);
    if (!a.byteLength) continue;
    const bytes = new Uint8Array(round4(a.byteLength));
    bytes.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
    device.queue.writeBuffer(gpu[id], 0, bytes);
  }
  if (status) device.queue.writeBuffer(status, 0, new Int32Array(plan.checks.length * 4));
  const maxGroups = device.limits.maxComputeWorkgroupsPerDimension;
  const encoder = device.createCommandEncoder();
  plan.steps.forEach((s, i) => {
    for (const [src, dst] of s.copies)
      if (bytesOf(src)) encoder.copyBufferToBuffer(gpu[src], 0, gpu[dst], 0, round4(bytesOf(src)));
    if (!s.workItems) return;
    const n = Math.ceil(s.workItems / GROUP), x = Math.min(n, maxGroups), y = Math.ceil(n / x);
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipelines.get(s.symbol));
    pass.setBindGroup(0, groups[i]);
    pass.dispatchWorkgroups(x, y);
    pass.end();
  });
  const reads = plan.outputs.map(([name, id]) => [name, id, plan.buffers[id].storage]);
  if (status) reads.push(['(status)', -1, -1]);
  const staging = reads.map(([name, id, storage]) => {
    const size = Math.max(16, round4(id < 0 ? plan.checks.length * 16 : bytesOf(id)));
    const s = device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    encoder.copyBufferToBuffer(id < 0 ? status : gpu[storage], 0, s, 0, size);
    return s;
  });
  device.queue.submit([encoder.finish()]);
  await Promise.all(staging.map((s) => s.mapAsync(GPUMapMode.READ)));
  const outputs = {};
  let failure = null;
  reads.forEach(([name, id], k) => {
    const bytes = new Uint8Array(staging[k].getMappedRange()).slice(0, id < 0 ? plan.checks.length * 16 : bytesOf(id));
    staging[k].unmap();
    staging[k].destroy();
    if (id >= 0) {
      const T = arrayTypes[plan.buffers[id].dtype];
      outputs[name] = new T(bytes.buffer, 0, bytes.byteLength / T.BYTES_PER_ELEMENT);
      return;
    }
    const st = new Int32Array(bytes.buffer);
    plan.checks.forEach((c, s) => {
      if (failure || !st[s * 4]) return;
      const v = (BigInt(st[s * 4 + 3]) << 32n) | BigInt(st[s * 4 + 2] >>> 0);
      failure = `${c.where}: index ${v} (at position ${st[s * 4 + 1]} of the indices) is out of range for an axis of size ${c.axisSize}`;
    });
  });
  if (failure) throw new Error(`rlx webgpu: ${failure}`);
  return outputs;
}

// What run() takes and returns: name -> { dtype, shape }.
export const signature = {
  inputs: Object.fromEntries(plan.inputs.map(([n, id]) => [n, { dtype: plan.buffers[id].dtype, shape: plan.buffers[id].shape }])),
  outputs: Object.fromEntries(plan.outputs.map(([n, id]) => [n, { dtype: plan.buffers[id].dtype, shape: plan.buffers[id].shape }])),
};
)JS";

const char* kind_name(lir::BufferKind k) {
  switch (k) {
    case lir::BufferKind::kInput: return "input";
    case lir::BufferKind::kOutput: return "output";
    case lir::BufferKind::kConstant: return "constant";
    case lir::BufferKind::kAlias: return "alias";
    default: return "temp";
  }
}

std::string list(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return "[" + s + "]";
}

// Where a kernel computes on or binds `dt` ("kernel k3_add"), or "". An input or output held
// in dt but read and written only through 32-bit views (split-i64) needs nothing of the
// browser: its bytes travel as they are.
std::string kernel_dtype_use(const lir::Program& p, DType dt) {
  for (const lir::Kernel& k : p.kernels) {
    if (const auto* l = std::get_if<lir::LoopKernel>(&k)) {
      for (const lir::Expr& e : l->exprs)
        if (e.dtype == dt || (e.kind == lir::ExprKind::kLoad && p.buffers[e.load.buffer].dtype == dt))
          return fmt::format("kernel {}", l->name);
      for (const lir::Store& st : l->stores)
        if (p.buffers[st.buffer].dtype == dt) return fmt::format("kernel {}", l->name);
      continue;
    }
    const auto& c = std::get<lir::CallKernel>(k);
    for (const auto* list : {&c.inputs, &c.outputs})
      for (int32_t b : *list)
        if (p.buffers[b].dtype == dt) return fmt::format("the {} call", c.callee);
  }
  return "";
}

// Why the ES module cannot run `program` in a browser, or "".
std::string unsupported(const lir::Program& program, const gpu_host::ModulePlan& plan) {
  for (const gpu_host::Step& s : plan.steps)
    if (std::holds_alternative<gpu_host::HostWhile>(s))
      return "the program has a while loop, whose host control flow the ES module does not run yet; run it with "
             "`rlx run --target webgpu`";
  for (DType t : {DType::kI64, DType::kF64}) {
    std::string at = kernel_dtype_use(program, t);
    if (!at.empty())
      return fmt::format("{} uses {}, which WebGPU in browsers lacks (only wgpu-native's shader-int64/shader-f64 "
                         "have it); compile with RLX_WEBGPU_PORTABLE=1 to have rlx refuse such nodes by name",
                         at, dtype_name(t));
  }
  return "";
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) throw_user_error(fmt::format("webgpu: cannot write {}", path.string()));
}

}  // namespace

std::vector<Artifact> write_es_module(const lir::Program& program, const gpu_host::ModulePlan& plan,
                                      const std::filesystem::path& dir) {
  std::string weights;
  std::string js = "// Generated by rlx (target webgpu): runs the program's WGSL kernels with WebGPU.\n"
                   "// import { run } from './model.mjs'; const outputs = await run({ name: typedArray, ... });\n"
                   "const plan = {\n  buffers: [\n";
  for (const lir::Buffer& b : program.buffers) {
    int64_t offset = -1;
    if (b.kind == lir::BufferKind::kConstant && b.nbytes() > 0) {
      offset = static_cast<int64_t>(weights.size());
      weights.append(static_cast<const char*>(b.data.data()), static_cast<size_t>(b.nbytes()));
      weights.resize((weights.size() + 3) & ~size_t{3}, '\0');
    }
    js += fmt::format("    {{ id: {}, name: {}, kind: '{}', dtype: '{}', shape: {}, bytes: {}, storage: {}, offset: {} }},\n",
                      b.id, json::json_quote(b.name), kind_name(b.kind), dtype_name(b.dtype), list(b.shape), b.nbytes(),
                      program.storage_of(b.id), offset);
  }
  js += "  ],\n  inputs: [";
  for (auto& [name, id] : program.inputs) js += fmt::format("[{}, {}], ", json::json_quote(name), id);
  js += "],\n  outputs: [";
  for (auto& [name, id] : program.outputs) js += fmt::format("[{}, {}], ", json::json_quote(name), id);
  js += "],\n  steps: [\n";
  for (const gpu_host::Step& s : plan.steps) {
    const auto* l = std::get_if<gpu_host::Launch>(&s);
    if (!l) continue;
    std::string copies;
    for (auto [src, dst] : l->copies_before) copies += fmt::format("[{}, {}], ", src, dst);
    std::vector<int64_t> ids(l->buffers.begin(), l->buffers.end());
    js += fmt::format("    {{ symbol: '{}', buffers: {}, workItems: {}, copies: [{}], status: {} }},\n", l->symbol,
                      list(ids), l->work_items, copies, l->status_slot);
  }
  js += "  ],\n  checks: [";
  for (const gpu_host::IndexCheck& c : plan.checks)
    js += fmt::format("{{ where: {}, axisSize: {} }}, ", json::json_quote(c.where), c.axis_size);
  js += fmt::format("],\n  weightBytes: {},\n  unsupported: {},\n}};\n", weights.size(),
                    json::json_quote(unsupported(program, plan)));
  js += kRuntime;
  write_file(dir / "model.mjs", js);
  write_file(dir / "weights.bin", weights);
  return {Artifact{"model.mjs", "es-module"}, Artifact{"weights.bin", "weights"}};
}

}  // namespace rlx::webgpu
