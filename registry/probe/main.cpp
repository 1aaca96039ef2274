// rlx-plugin-probe: loads one plugin in a process of its own, so that rlx learns whether it
// crashes, hangs or ends the process before loading it into its own (registry/src/probe.h).
#include "probe.h"

int main(int argc, char** argv) {
  return rlx::registry::detail::probe_main(argc, argv);
}
