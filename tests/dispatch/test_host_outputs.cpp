// Host outputs in the target's own host memory (rlx/core/host_memory.h): a target answering
// kHostMemoryExtension gets asked for every output of at least min_bytes, and its memory goes
// back to it when the last copy of the output is gone, even after the model and the session.
// The target here is the cpu target with the extension added, its memory counted.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <set>

#include "rlx/core/host_memory.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx {
namespace {

struct Ledger {
  std::set<void*> live;
  int allocations = 0, releases = 0;
  bool exhausted = false;
};

// Forwards everything to the cpu target and answers kHostMemoryExtension from `ledger`.
class HostMemoryTarget final : public Target {
 public:
  HostMemoryTarget(std::shared_ptr<Target> inner, Ledger& ledger) : inner_(std::move(inner)) {
    table_.context = &ledger;
    table_.min_bytes = 1024;
    table_.allocate = [](void* context, uint64_t bytes) noexcept -> void* {
      auto& l = *static_cast<Ledger*>(context);
      if (l.exhausted) return nullptr;
      void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
      // Garbage, as reused page-locked memory holds: the run must write every byte.
      std::memset(p, 0x7f, bytes);
      l.live.insert(p);
      ++l.allocations;
      return p;
    };
    table_.release = [](void* context, void* data, uint64_t) noexcept {
      auto& l = *static_cast<Ledger*>(context);
      l.live.erase(data);
      ++l.releases;
      std::free(data);
    };
  }
  std::string name() const override { return "cpu-with-host-memory"; }
  Verdict claim_native(const NodeSignature& s) const override { return inner_->claim_native(s); }
  Verdict accepts_primitive(const NodeSignature& s) const override {
    return inner_->accepts_primitive(s);
  }
  Verdict can_execute() const override { return inner_->can_execute(); }
  std::unique_ptr<Executable> compile(const lir::Program& p) override { return inner_->compile(p); }
  std::vector<Artifact> emit(const lir::Program& p, const std::filesystem::path& dir) override {
    return inner_->emit(p, dir);
  }
  const void* extension(const std::string& name, uint32_t version) const override {
    if (name == kHostMemoryExtension && version == kHostMemoryVersion) return &table_;
    return inner_->extension(name, version);
  }

 private:
  std::shared_ptr<Target> inner_;
  HostMemoryV1 table_;
};

// big = x + x (4 KiB, from the target's memory), small = s * s (8 bytes, ordinary memory).
const char* kGraph = R"(graph @g(%x: f32[1024], %s: f32[2]) {
  %big = Add(%x, %x) : f32[1024]
  %small = Mul(%s, %s) : f32[2]
  return %big, %small
}
)";

Tensor ramp() {
  std::vector<float> v(1024);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) - 512.0f;
  return test::f32({1024}, v);
}

TEST(HostOutputs, LargeOutputsComeFromTheTargetsMemoryAndGoBackToIt) {
  Ledger ledger;
  NamedTensors out;
  {
    Session s(std::make_shared<HostMemoryTarget>(test::cpu_target(), ledger));
    CompiledModel m = s.compile(parse_graph(kGraph));
    out = m.run({{"x", ramp()}, {"s", test::f32({2}, {3, -4})}});
    EXPECT_EQ(ledger.allocations, 1);
    EXPECT_EQ(ledger.live.count(out.at("big").data()), 1u);
    EXPECT_EQ(ledger.live.count(const_cast<void*>(out.at("small").data())), 0u);
    // A second run into the same outputs allocates nothing.
    const void* big = out.at("big").data();
    m.run({{"x", ramp()}, {"s", test::f32({2}, {3, -4})}}, out);
    EXPECT_EQ(out.at("big").data(), big);
    EXPECT_EQ(ledger.allocations, 1);
  }
  // The model and the session are gone; the output is still readable and still the target's.
  std::vector<double> big = test::values(out.at("big"));
  for (size_t i = 0; i < big.size(); ++i) ASSERT_EQ(big[i], 2.0 * (static_cast<double>(i) - 512));
  EXPECT_EQ(test::values(out.at("small")), (std::vector<double>{9, 16}));
  EXPECT_EQ(ledger.releases, 0);
  out.clear();
  EXPECT_EQ(ledger.releases, 1);
  EXPECT_TRUE(ledger.live.empty());
}

TEST(HostOutputs, ATargetWithNoMemoryLeftGivesOrdinaryOutputs) {
  Ledger ledger;
  ledger.exhausted = true;
  Session s(std::make_shared<HostMemoryTarget>(test::cpu_target(), ledger));
  CompiledModel m = s.compile(parse_graph(kGraph));
  NamedTensors out = m.run({{"x", ramp()}, {"s", test::f32({2}, {3, -4})}});
  EXPECT_EQ(ledger.allocations, 0);
  EXPECT_EQ(test::values(out.at("big"))[1023], 2.0 * 511);
}

}  // namespace
}  // namespace rlx
