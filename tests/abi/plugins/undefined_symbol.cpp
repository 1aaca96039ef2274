// A plugin referencing a function no library defines, as one built against another librlx_core
// would: loading must fail with the loader's message instead of aborting at the first call.
#include "rlx/sdk/abi.h"
#include "rlx/sdk/boundary.h"

extern "C" void rlx_test_symbol_defined_nowhere();

RLX_PLUGIN_EXPORT const RlxPluginAbi* rlx_plugin_abi() {
  static const RlxPluginAbi abi{RLX_ABI_MAJOR, RLX_ABI_MINOR, RLX_TOOLCHAIN_TAG, "target"};
  return &abi;
}

RLX_PLUGIN_EXPORT void rlx_plugin_factory(rlx::sdk::PluginObjects* out) noexcept {
  rlx_test_symbol_defined_nowhere();
}
