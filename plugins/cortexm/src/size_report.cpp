#include "size_report.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "c_emitter.h"
#include "rlx/core/json.h"
#include "rlx/sdk/process.h"

namespace rlx::cortexm {

namespace fs = std::filesystem;

namespace {

// One compile of model.c takes well under a second; a hung tool must not hang rlx compile.
constexpr int kToolTimeoutS = 120;

// "arm-none-eabi-gcc" -> "arm-none-eabi-size" beside it.
std::string sibling(const std::string& gcc, const std::string& tool) {
  const std::string suffix = "gcc";
  if (gcc.size() < suffix.size()) return tool;
  return gcc.substr(0, gcc.size() - suffix.size()) + tool;
}

// The sizes arm-none-eabi-size -A prints, by section name.
void read_sections(const std::string& text, CoreSize& c) {
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::stringstream l(line);
    std::string name;
    int64_t size = 0;
    if (!(l >> name >> size)) continue;
    if (name.rfind(".text", 0) == 0)
      c.text += size;
    else if (name.rfind(".rodata", 0) == 0)
      c.rodata += size;
    else if (name.rfind(".data", 0) == 0)
      c.data += size;
    else if (name.rfind(".bss", 0) == 0)
      c.bss += size;
  }
}

// The largest frame gcc's .su file lists ("model.c:12:6:rlx_model_run\t24\tstatic").
int64_t read_stack(const fs::path& su) {
  std::ifstream in(su);
  int64_t most = 0;
  for (std::string line; std::getline(in, line);) {
    std::stringstream l(line);
    std::string where;
    int64_t bytes = 0;
    if (std::getline(l, where, '\t') && l >> bytes) most = std::max(most, bytes);
  }
  return most;
}

}  // namespace

std::string arm_gcc() {
  const char* named = std::getenv("RLX_ARM_GCC");
  return sdk::find_executable(named && *named ? named : "arm-none-eabi-gcc");
}

SizeReport measure_sizes(const fs::path& dir, int64_t arena_bytes, const std::string& only) {
  SizeReport r;
  r.toolchain = arm_gcc();
  if (r.toolchain.empty()) {
    r.why_not = "arm-none-eabi-gcc is not on PATH (Debian: apt install gcc-arm-none-eabi)";
    return r;
  }
  const fs::path scratch = dir / ".cortexm-size";
  fs::create_directories(scratch);
  for (const CpuFlags& cpu : known_cpus()) {
    if (!only.empty() && cpu.cpu != only) continue;
    const fs::path obj = scratch / (cpu.cpu + ".o");
    std::vector<std::string> argv = {
        r.toolchain,      "-c", "-O2", "-std=c99", "-fstack-usage", "-ffunction-sections",
        "-fdata-sections"};
    std::stringstream flags(cpu.flags);
    for (std::string f; flags >> f;) argv.push_back(f);
    argv.insert(argv.end(), {"-I", dir.string(), (dir / "model.c").string(), "-o", obj.string()});
    std::string out;
    if (sdk::run_command(argv, &out, kToolTimeoutS) != 0) {
      r.why_not = fmt::format("{} failed on model.c for {}: {}", r.toolchain, cpu.cpu, out);
      r.cores.clear();
      break;
    }
    CoreSize c;
    c.cpu = cpu.cpu;
    c.arena = arena_bytes;
    std::string sizes;
    if (sdk::run_command({sibling(r.toolchain, "size"), "-A", obj.string()}, &sizes,
                         kToolTimeoutS) == 0)
      read_sections(sizes, c);
    c.stack = read_stack(scratch / (cpu.cpu + ".su"));
    r.cores.push_back(c);
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return r;
}

std::string size_report_json(const SizeReport& r) {
  std::string cores;
  for (const CoreSize& c : r.cores)
    cores += fmt::format(
        "{}\n    {{\"cpu\": {}, \"text\": {}, \"rodata\": {}, \"data\": {}, \"bss\": {}, "
        "\"stack\": {}, \"arena\": {}, \"flash\": {}, \"ram\": {}}}",
        cores.empty() ? "" : ",", json::json_quote(c.cpu), c.text, c.rodata, c.data, c.bss, c.stack,
        c.arena, c.text + c.rodata + c.data, c.arena + c.stack + c.data + c.bss);
  return fmt::format("{{\n  \"toolchain\": {},\n  \"why_not\": {},\n  \"cores\": [{}\n  ]\n}}\n",
                     json::json_quote(r.toolchain), json::json_quote(r.why_not), cores);
}

std::string size_report_text(const SizeReport& r) {
  if (r.cores.empty()) return fmt::format("cortexm: no code size measured: {}\n", r.why_not);
  std::string s;
  for (const CoreSize& c : r.cores)
    s += fmt::format(
        "cortexm {}: flash {} B (text {}, rodata {}, data {}), RAM {} B (arena {}, stack {}, "
        "data+bss {})\n",
        c.cpu, c.text + c.rodata + c.data, c.text, c.rodata, c.data,
        c.arena + c.stack + c.data + c.bss, c.arena, c.stack, c.data + c.bss);
  return s;
}

}  // namespace rlx::cortexm
