// A hand-written handshake, so a test can export what a real plugin built by another SDK or
// toolchain would: the ABI version, toolchain tag and kind come from compile definitions.
#include "rlx/sdk/abi.h"
#include "rlx/sdk/boundary.h"

#ifndef RLX_TEST_ABI_MAJOR
#define RLX_TEST_ABI_MAJOR RLX_ABI_MAJOR
#endif
#ifndef RLX_TEST_ABI_MINOR
#define RLX_TEST_ABI_MINOR RLX_ABI_MINOR
#endif
#ifndef RLX_TEST_TOOLCHAIN
#define RLX_TEST_TOOLCHAIN RLX_TOOLCHAIN_TAG
#endif
#ifndef RLX_TEST_KIND
#define RLX_TEST_KIND "target"
#endif

RLX_PLUGIN_EXPORT const RlxPluginAbi* rlx_plugin_abi() {
  static const RlxPluginAbi abi{RLX_TEST_ABI_MAJOR, RLX_TEST_ABI_MINOR, RLX_TEST_TOOLCHAIN,
                                RLX_TEST_KIND};
  return &abi;
}

#ifndef RLX_TEST_NO_FACTORY
// The registry must reject the plugin before calling this.
RLX_PLUGIN_EXPORT void rlx_plugin_factory(rlx::sdk::PluginObjects* out) noexcept {
  out->error = "the factory of an incompatible plugin was called";
}
#endif
