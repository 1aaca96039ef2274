// The metal target's kernel interface checked against an independent translator: the vulkan
// target's SPIR-V of the same programs, turned into MSL by spirv-cross (Khronos' SPIR-V -> MSL
// compiler, the one MoltenVK uses), must declare, kernel by kernel, the buffers the metal target's
// MSL declares: the same count, at the same [[buffer(j)]] indices, with compatible element types
// and the same access (const or not). Both targets take their buffers from the one GPU host plan
// (kernel_buffers(): binding j of set 0 on vulkan, [[buffer(j)]] on metal), so a change to either
// side's binding layout fails here.
//
// What differs by design, and is encoded below rather than ignored:
//  * Names. A SPIR-V module has one entry point, `main`, which MSL reserves: spirv-cross names it
//    `main0`. The kernel's symbol is the module's name (vulkan writes spirv/<symbol>.spv and marks
//    each GLSL section `//@rlx-kernel <symbol>`), and those symbols must be metal's kernel names in
//    module order.
//  * Element types. GLSL computes f16 and bf16 in f32 and stores their 16-bit patterns (uint16_t,
//    spirv-cross: ushort), and bool as a byte (uint8_t: uchar); metal stores half, bfloat and bool.
//    Each pair has the same size, so the host's buffers are the same bytes (kStorageAs).
//  * Thread indices. A Vulkan dispatch is a 2D grid of groups (rows of at most 65535 groups), so
//    its kernels read gl_GlobalInvocationID and gl_NumWorkGroups (uint3); a Metal dispatch is one
//    row and every metal kernel takes (rlx_gid, rlx_lid, rlx_group) as uints in that order (those
//    with SIMD-group reductions then rlx_lane, rlx_simd, rlx_simds). Neither
//    side passes anything else: no push constants, no sizes buffer (shapes are constants of the
//    module; symbolic dims are bound per run and the module rebuilt).
//  * spirv-cross numbers [[buffer(i)]] in its own resource order unless told to keep the SPIR-V
//    bindings (--msl-decoration-binding), as a Vulkan-on-Metal layer maps them explicitly.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "rlx/core/error.h"
#include "rlx/sdk/process.h"
#include "target_suite.h"
#include "test_support.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;

struct BufferParam {
  int index = -1;    // [[buffer(index)]]
  std::string type;  // element type (a spirv-cross block struct resolved to its array's element)
  bool is_const = false;
  std::string name;
};

struct KernelSignature {
  std::string name;
  std::vector<BufferParam> buffers;                           // in declaration order
  std::vector<std::pair<std::string, std::string>> builtins;  // (type, [[attribute]])
};

// The element types the two sides store the same bytes as (see the top of the file): metal's
// type -> spirv-cross's. Types not listed must be equal.
const std::map<std::string, std::string> kStorageAs = {
    {"half", "ushort"}, {"bfloat", "ushort"}, {"bool", "uchar"}};

// What a metal kernel takes after its buffers, always.
const std::vector<std::pair<std::string, std::string>> kMetalIndices = {
    {"uint", "thread_position_in_grid"},
    {"uint", "thread_position_in_threadgroup"},
    {"uint", "threadgroup_position_in_grid"}};
// What a kernel with SIMD-group reductions (norms, gemv, decode attention) takes after those:
// its lane, its SIMD group and their count. Vulkan's GLSL has no such reductions (the renderer
// uses them in MSL only), so its side has no counterpart to compare them with.
const std::vector<std::pair<std::string, std::string>> kMetalSimdIndices = {
    {"uint", "thread_index_in_simdgroup"},
    {"uint", "simdgroup_index_in_threadgroup"},
    {"uint", "simdgroups_per_threadgroup"}};

std::vector<std::pair<std::string, std::string>> with_simd_indices() {
  auto all = kMetalIndices;
  all.insert(all.end(), kMetalSimdIndices.begin(), kMetalSimdIndices.end());
  return all;
}
// The only builtins spirv-cross may declare for the vulkan kernels, with their types: GLSL's
// gl_GlobalInvocationID, gl_NumWorkGroups (the 2D grid), gl_LocalInvocationID, gl_WorkGroupID and
// gl_LocalInvocationIndex.
const std::map<std::string, std::string> kVulkanIndices = {
    {"thread_position_in_grid", "uint3"},
    {"threadgroups_per_grid", "uint3"},
    {"thread_position_in_threadgroup", "uint3"},
    {"threadgroup_position_in_grid", "uint3"},
    {"thread_index_in_threadgroup", "uint"}};

std::string squeeze(const std::string& s) {  // whitespace runs to one space, trimmed
  std::string out;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Block structs as spirv-cross writes them for a storage buffer, `struct B0 { float b0[1]; };`:
// the struct's name -> (element type, the array's name, which is GLSL's name for the buffer).
std::map<std::string, std::pair<std::string, std::string>> block_arrays(const std::string& msl) {
  static const std::regex kBlock(R"(struct (\w+)\s*\{\s*([\w ]+?)\s+(\w+)\[\d*\];\s*\};)");
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (auto it = std::sregex_iterator(msl.begin(), msl.end(), kBlock); it != std::sregex_iterator();
       ++it)
    out[(*it)[1]] = {(*it)[2], (*it)[3]};
  return out;
}

// Every `kernel void name(...)` of MSL text. A parameter that is neither a device buffer nor a
// builtin index is a test failure: the check only holds while both sides stay within that form.
std::vector<KernelSignature> parse_kernels(const std::string& msl) {
  static const std::regex kBuffer(
      R"(^(const )?device (const )?(\w+) ?([*&]) ?(\w+) ?\[\[buffer\((\d+)\)\]\]$)");
  static const std::regex kBuiltin(R"(^(\w+) (\w+) ?\[\[(\w+)\]\]$)");
  const auto blocks = block_arrays(msl);
  std::vector<KernelSignature> out;
  for (size_t at = msl.find("kernel void "); at != std::string::npos;
       at = msl.find("kernel void ", at + 1)) {
    if (at > 0 && msl[at - 1] != '\n') continue;
    const size_t open = msl.find('(', at);
    KernelSignature k;
    k.name = squeeze(msl.substr(at + 12, open - at - 12));
    // The parameters: split at commas outside parentheses and brackets ([[buffer(0)]]).
    std::vector<std::string> params(1);
    int depth = 0;
    size_t i = open + 1;
    for (; i < msl.size() && depth >= 0; ++i) {
      const char c = msl[i];
      if (c == '(' || c == '[') ++depth;
      if (c == ')' || c == ']') --depth;
      if (depth < 0) break;
      if (c == ',' && depth == 0)
        params.emplace_back();
      else
        params.back() += c;
    }
    for (const std::string& raw : params) {
      const std::string p = squeeze(raw);
      std::smatch m;
      if (std::regex_match(p, m, kBuffer)) {
        BufferParam b{std::stoi(m[6]), m[3], m[1].matched || m[2].matched, m[5]};
        if (m[4] == "&") {  // a spirv-cross block: its array's element type and name
          auto block = blocks.find(b.type);
          if (block == blocks.end()) ADD_FAILURE() << k.name << ": no block struct " << b.type;
          std::tie(b.type, b.name) =
              block == blocks.end() ? std::pair<std::string, std::string>{"?", "?"} : block->second;
        }
        k.buffers.push_back(b);
      } else if (std::regex_match(p, m, kBuiltin)) {
        k.builtins.emplace_back(m[1], m[3]);
      } else {
        ADD_FAILURE() << k.name << ": a parameter the check does not know: '" << p << "'";
      }
    }
    out.push_back(std::move(k));
  }
  return out;
}

// The symbols vulkan's GLSL module marks, in order.
std::vector<std::string> vulkan_symbols(const std::string& glsl) {
  static const std::regex kMarker(R"(//@rlx-kernel (\w+))");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(glsl.begin(), glsl.end(), kMarker);
       it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

class MslInterface : public ::testing::Test {
 protected:
  void SetUp() override {
    spirv_cross_ = sdk::find_executable("spirv-cross");
    if (spirv_cross_.empty())
      GTEST_SKIP() << "spirv-cross is not on PATH (Debian: apt install spirv-cross), so the metal "
                      "interface is not checked against it";
    try {
      vulkan_ = test::target_named("vulkan");
    } catch (const std::exception& e) {
      GTEST_SKIP() << "the vulkan target is not here, so there is no SPIR-V to compare: "
                   << e.what();
    }
  }

  // spirv-cross's MSL of one SPIR-V module, its bindings kept.
  std::string spirv_cross_msl(const fs::path& spv) {
    const fs::path out = fs::path(spv).replace_extension(".msl");
    std::string log;
    const int rc =
        sdk::run_command({spirv_cross_, "--msl", "--msl-version", "30100",
                          "--msl-decoration-binding", spv.string(), "--output", out.string()},
                         &log);
    EXPECT_EQ(rc, 0) << "spirv-cross failed on " << spv << ":\n" << log;
    return test::read_file(out);
  }

  // Compiles `ir` for both targets and compares every kernel's interface. Returns the number of
  // kernels compared.
  int compare(const std::string& ir, const std::string& what) {
    SCOPED_TRACE(what);
    std::unique_ptr<test::Emitted> vk;
    try {
      vk = std::make_unique<test::Emitted>(ir, vulkan_);
    } catch (const Error& e) {
      // Without a Vulkan device the vulkan target refuses what it cannot probe for (8/16-bit
      // storage, int64): nothing to compare, said so.
      if (!vulkan_->can_execute().ok) {
        std::printf("%s: vulkan refuses it without a device here: %s\n", what.c_str(), e.what());
        return 0;
      }
      throw;
    }
    test::Emitted mt(ir, test::target_named("metal"));
    const std::vector<KernelSignature> metal = parse_kernels(mt.text("metal_kernels.metal"));
    const std::vector<std::string> symbols = vulkan_symbols(vk->text("vulkan_kernels.comp"));
    std::vector<std::string> metal_names;
    for (const KernelSignature& k : metal) metal_names.push_back(k.name);
    EXPECT_EQ(metal_names, symbols) << "the two modules' kernels differ";
    if (metal_names != symbols) return 0;
    for (const KernelSignature& m : metal) {
      SCOPED_TRACE(m.name);
      const fs::path spv = vk->dir() / "spirv" / (m.name + ".spv");
      EXPECT_TRUE(fs::exists(spv)) << spv;
      const std::vector<KernelSignature> from_spirv = parse_kernels(spirv_cross_msl(spv));
      EXPECT_EQ(from_spirv.size(), 1u);
      if (from_spirv.size() != 1) continue;
      const KernelSignature& v = from_spirv[0];
      EXPECT_EQ(v.name, "main0") << "spirv-cross's name for SPIR-V's entry point main";
      if (m.builtins != with_simd_indices()) EXPECT_EQ(m.builtins, kMetalIndices);
      for (const auto& [type, attribute] : v.builtins) {
        auto known = kVulkanIndices.find(attribute);
        EXPECT_TRUE(known != kVulkanIndices.end()) << "vulkan reads [[" << attribute << "]]";
        if (known != kVulkanIndices.end()) {
          EXPECT_EQ(type, known->second) << attribute;
        }
      }
      EXPECT_EQ(m.buffers.size(), v.buffers.size()) << "buffer count";
      if (m.buffers.size() != v.buffers.size()) continue;
      for (size_t j = 0; j < m.buffers.size(); ++j) {
        const BufferParam &a = m.buffers[j], &b = v.buffers[j];
        SCOPED_TRACE("metal buffer " + a.name);
        EXPECT_EQ(a.index, static_cast<int>(j)) << "metal binds its j-th buffer at buffer(j)";
        EXPECT_EQ(b.index, static_cast<int>(j)) << "vulkan binds its j-th buffer at binding j";
        auto storage = kStorageAs.find(a.type);
        EXPECT_EQ(storage == kStorageAs.end() ? a.type : storage->second, b.type)
            << "metal stores " << a.type;
        EXPECT_EQ(a.is_const, b.is_const) << "const (read-only) on one side only";
        // The renderer's buffers are b<id> on both (the LIR buffer); library kernels name theirs.
        if (std::regex_match(a.name, std::regex(R"(b\d+)"))) {
          EXPECT_EQ(a.name, b.name);
        }
      }
    }
    return static_cast<int>(metal.size());
  }

  std::string spirv_cross_;
  std::shared_ptr<Target> vulkan_;
};

// The kinds of kernel the brief of this check names, one program each: fused elementwise (at
// every storage type the two share), reductions, tiled products with their fused epilogues,
// attention (tiled and per row), gather and scatter (library kernels with a status buffer).
TEST_F(MslInterface, RepresentativeKernelsDeclareTheSameBuffers) {
  const char* elementwise =
      R"(graph @t(%x: f32[70], %h: f16[70], %g: bf16[70], %p: bool[70], %i: i64[70], %c: i8[70]) {
  %xh = convert(%h) {dtype = f32} : f32[70]
  %e = exp(%x) : f32[70]
  %a = add(%e, %xh) : f32[70]
  %s = select(%p, %a, %x) : f32[70]
  %gb = mul(%g, %g) : bf16[70]
  %n = not(%p) : bool[70]
  %ii = mul(%i, %i) : i64[70]
  %cc = add(%c, %c) : i8[70]
  return %s, %gb, %n, %ii, %cc
}
)";
  const char* reductions = R"(graph @t(%x: f32[5,300], %h: f16[5,7]) {
  %s = reduce_sum(%x) {axes = [1]} : f32[5]
  %m = reduce_max(%x) {axes = [0]} : f32[300]
  %hs = reduce_sum(%h) {axes = [1]} : f16[5]
  return %s, %m, %hs
}
)";
  const char* gather = R"(graph @t(%x: f32[4,2], %i: i64[3], %u: f32[3,2]) {
  %g = gather(%x, %i) {axis = 0} : f32[3,2]
  %s = scatter(%x, %i, %u) {axis = 0, reduce = "add"} : f32[4,2]
  return %g, %s
}
)";
  int kernels = 0;
  kernels += compare(elementwise, "fused elementwise");
  kernels += compare(reductions, "reductions");
  kernels += compare(test::kEpilogueProgram, "kEpilogueProgram");
  kernels += compare(test::kMergeHeadsProgram, "kMergeHeadsProgram");
  kernels += compare(gather, "gather and scatter");
  kernels += compare(test::kMixedProgram, "kMixedProgram");
  std::printf("%d kernels compared\n", kernels);
}

// Every program the GPU-like targets' codegen tests compile (test::every_kernel_programs: every
// elementwise primitive at every dtype, the suite's programs, norms) that both targets take.
TEST_F(MslInterface, EveryKernelProgramDeclaresTheSameBuffers) {
  int kernels = 0, programs = 0;
  for (const test::NamedProgram& p : test::every_kernel_programs()) {
    // Each side refuses what its language lacks (metal: f64; vulkan: u16, u32, u64 as gpu does):
    // those programs have no pair to compare.
    if (!test::compile_error(p.ir, test::target_named("metal")).empty() ||
        !test::compile_error(p.ir, vulkan_).empty())
      continue;
    kernels += compare(p.ir, p.what);
    ++programs;
  }
  std::printf("%d programs, %d kernels compared\n", programs, kernels);
  EXPECT_GE(programs, 10);
}

}  // namespace
}  // namespace rlx
