// A valid handshake whose factory attacks the host: it crashes, or it writes 16 bytes of 0x41
// over the objects the host passed in (the two boundary pointers the host then calls through).
#include <cstring>

#include "rlx/sdk/abi.h"
#include "rlx/sdk/boundary.h"

RLX_PLUGIN_EXPORT const RlxPluginAbi* rlx_plugin_abi() {
  static const RlxPluginAbi abi{RLX_ABI_MAJOR, RLX_ABI_MINOR, RLX_TOOLCHAIN_TAG, "target"};
  return &abi;
}

RLX_PLUGIN_EXPORT void rlx_plugin_factory(rlx::sdk::PluginObjects* out) noexcept {
#if defined(HOSTILE_FACTORY_SEGV)
  (void)out;
  volatile int* volatile address = nullptr;  // volatile: a store seen to go to null is dropped
  *address = 1;
#else
  std::memset(static_cast<void*>(out), 0x41, 16);
#endif
}
