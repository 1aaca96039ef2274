// The op x dtype legality table of a loaded target, computed once at discovery so `rlx plugins`
// and `rlx ops --target` can show coverage without compiling anything.
#include "internal.h"
#include "rlx/core/op_registry.h"

namespace rlx::registry {

LegalityTable::Counts LegalityTable::counts() const {
  Counts c;
  for (const auto& [key, legality] : entries) {
    switch (legality.kind) {
      case OpLegality::kNative:
        ++c.native;
        break;
      case OpLegality::kSharedIr:
        ++c.shared_ir;
        break;
      case OpLegality::kRewritten:
        ++c.rewritten;
        break;
      case OpLegality::kIllegal:
        ++c.illegal;
        break;
      case OpLegality::kNotApplicable:
        break;  // not a gap in the target's coverage
    }
  }
  return c;
}

namespace detail {

LegalityTable build_legality_table(const Target& target) {
  LegalityTable table;
  const DType* dtypes = all_dtypes();
  for (const OpDef& op : OpRegistry::instance().ops()) {
    for (int i = 0; i < kNumDTypes; ++i) {
      OpLegality legality{OpLegality::kIllegal, {}};
      // Listing never throws: a failure while deciding is recorded as the entry's reason.
      try {
        legality = op_legality(op.name, dtypes[i], target);
      } catch (const std::exception& e) {
        legality = {OpLegality::kIllegal, std::string("error while deciding: ") + e.what()};
      }
      table.entries.emplace(std::make_pair(op.name, dtypes[i]), std::move(legality));
    }
  }
  return table;
}

}  // namespace detail
}  // namespace rlx::registry
