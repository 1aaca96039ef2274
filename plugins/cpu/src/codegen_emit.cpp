#include "codegen_emit.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "codegen_cache.h"
#include "codegen_module.h"
#include "codegen_toolchain.h"
#include "prebuilt_kernels.h"
#include "rlx/core/error.h"
#include "rlx/core/json.h"

namespace rlx::cpu {

namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw_user_error(fmt::format("cannot write {}", path.string()));
}

}  // namespace

std::vector<Artifact> emit_cpu_artifacts(const lir::Program& program, const fs::path& dir) {
  fs::create_directories(dir);
  KernelPlan plan = choose_kernel_plan();
  std::vector<Artifact> files;
  std::string report;
  // Loop kernels anywhere the executable builds a module: the program or a while loop's regions.
  const std::vector<lir::Program> programs = module_programs(program);
  auto loops_in = [](const lir::Program& p) {
    return std::any_of(p.kernels.begin(), p.kernels.end(),
                       [](const auto& k) { return std::holds_alternative<lir::LoopKernel>(k); });
  };
  const bool has_loops = std::any_of(programs.begin(), programs.end(), loops_in);
  if (plan.mode == KernelMode::kCompiled && has_loops) {
    // The modules the executable builds (the same cached builds, so `rlx run` afterwards loads
    // them at once), each with its source hash: what a loaded folder registers its objects by
    // (prebuilt_kernels.h). The first is cpu_kernels.{c,so}, a while loop's regions' follow.
    BuildStats total;
    bool all_hit = true;
    std::string modules;
    int index = 0;
    for (const lir::Program& p : programs) {
      if (!loops_in(p)) continue;
      KernelModule module(p, plan.toolchain);
      const BuildStats& s = module.stats();
      const std::string stem = index == 0 ? "cpu_kernels" : fmt::format("cpu_kernels.{}", index);
      ++index;
      write_file(dir / (stem + ".c"), module.source());
      files.push_back({stem + ".c", "c-source"});
      std::error_code ec;
      fs::remove(dir / (stem + ".so"), ec);
      fs::copy_file(s.object, dir / (stem + ".so"), ec);
      if (ec)
        throw_user_error(
            fmt::format("cannot copy {} to {}: {}", s.object.string(), dir.string(), ec.message()));
      files.push_back({stem + ".so", "shared-object"});
      modules += fmt::format("{}    {{\"source\": {}, \"object\": {}, \"source_hash\": {}}}",
                             modules.empty() ? "" : ",\n", json::json_quote(stem + ".c"),
                             json::json_quote(stem + ".so"),
                             json::json_quote(content_hash(module.source())));
      total.codegen_ms += s.codegen_ms;
      total.compiler_ms += s.compiler_ms;
      total.load_ms += s.load_ms;
      total.loop_kernels += s.loop_kernels;
      total.functions += s.functions;
      if (index == 1) total.object = s.object;
      all_hit = all_hit && s.cache_hit;
    }
    std::string flags;
    for (const auto& f : plan.toolchain.flags) flags += (flags.empty() ? "" : " ") + f;
    report = fmt::format(
        "{{\n  \"kernels\": \"compiled\",\n  \"note\": {},\n  \"compiler\": {},\n  \"version\": "
        "{},\n"
        "  \"isa\": {},\n  \"flags\": {},\n  \"cache\": {},\n  \"object\": {},\n"
        "  \"loop_kernels\": {},\n  \"functions\": {},\n  \"modules\": [\n{}\n  ],\n"
        "  \"stages_ms\": {{\"codegen\": {:.3f}, \"compiler\": {:.3f}, \"load\": {:.3f}}}\n}}\n",
        json::json_quote(plan.note), json::json_quote(plan.toolchain.compiler),
        json::json_quote(plan.toolchain.version), json::json_quote(plan.toolchain.isa),
        json::json_quote(flags), json::json_quote(all_hit ? "hit" : "miss"),
        json::json_quote(total.object.string()), total.loop_kernels, total.functions, modules,
        total.codegen_ms, total.compiler_ms, total.load_ms);
  } else {
    // Interpreted (or nothing to compile): the kernels as plain C, for reading.
    write_file(dir / "cpu_kernels.c", sdk::render_program(program, sdk::c_dialect()));
    files.push_back({"cpu_kernels.c", "c-source"});
    report = fmt::format("{{\n  \"kernels\": {},\n  \"note\": {},\n  \"stages_ms\": {{}}\n}}\n",
                         json::json_quote(plan.mode == KernelMode::kCompiled ? "compiled" : "interpreted"),
                         json::json_quote(has_loops ? plan.note : "no loop kernels"));
  }
  write_file(dir / "cpu_build.json", report);
  files.push_back({"cpu_build.json", "build-report"});
  return files;
}

Verdict cpu_execution_verdict() {
  KernelPlan plan = choose_kernel_plan();
  return Verdict{true, plan.note};
}

}  // namespace rlx::cpu
