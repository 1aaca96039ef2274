// `--target auto` and what rlx says about the device a target runs on.
#pragma once
#include <memory>
#include <string>

#include "rlx/core/target.h"
#include "rlx/registry/registry.h"

namespace rlx::cli {

// The fastest target that can execute here, said on stderr with the reason. The ranking
// (docs/user-guide.md, "Choosing a target"): a target on a hardware GPU (discrete before
// integrated, then by name), then cpu, then targets on software devices (lavapipe, llvmpipe,
// PoCL, SwiftShader emulate a GPU on the same cores the cpu target uses, with more overhead).
// Targets that do not say which device they use are left out.
std::shared_ptr<Target> choose_auto_target(const registry::Registry& reg);

// The note for a target whose device is software ("vulkan runs on lavapipe, ..."), or "".
std::string software_device_note(const Target& target);

}  // namespace rlx::cli
