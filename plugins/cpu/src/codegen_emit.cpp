#include "codegen_emit.h"

#include <fmt/format.h>

#include <fstream>

#include "codegen_module.h"
#include "codegen_toolchain.h"
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
  bool has_loops = false;
  for (const auto& k : program.kernels) has_loops = has_loops || std::holds_alternative<lir::LoopKernel>(k);
  if (plan.mode == KernelMode::kCompiled && has_loops) {
    // The same build the executable does: cached, so `rlx run` afterwards loads it at once.
    KernelModule module(program, plan.toolchain);
    const BuildStats& s = module.stats();
    write_file(dir / "cpu_kernels.c", module.source());
    files.push_back({"cpu_kernels.c", "c-source"});
    std::error_code ec;
    fs::remove(dir / "cpu_kernels.so", ec);
    fs::copy_file(s.object, dir / "cpu_kernels.so", ec);
    if (ec) throw_user_error(fmt::format("cannot copy {} to {}: {}", s.object.string(), dir.string(), ec.message()));
    files.push_back({"cpu_kernels.so", "shared-object"});
    std::string flags;
    for (const auto& f : plan.toolchain.flags) flags += (flags.empty() ? "" : " ") + f;
    report = fmt::format(
        "{{\n  \"kernels\": \"compiled\",\n  \"note\": {},\n  \"compiler\": {},\n  \"version\": {},\n"
        "  \"isa\": {},\n  \"flags\": {},\n  \"cache\": {},\n  \"object\": {},\n"
        "  \"loop_kernels\": {},\n  \"functions\": {},\n"
        "  \"stages_ms\": {{\"codegen\": {:.3f}, \"compiler\": {:.3f}, \"load\": {:.3f}}}\n}}\n",
        json::json_quote(plan.note), json::json_quote(plan.toolchain.compiler),
        json::json_quote(plan.toolchain.version), json::json_quote(plan.toolchain.isa),
        json::json_quote(flags), json::json_quote(s.cache_hit ? "hit" : "miss"),
        json::json_quote(s.object.string()), s.loop_kernels, s.functions, s.codegen_ms,
        s.compiler_ms, s.load_ms);
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
