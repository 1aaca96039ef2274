/* Libraries that attack the process loading them, each selected by one definition: the outside
 * review's recipes (issue 24). The registry must survive every one of them, because its probe
 * loads them in a child process first. Plain C, as `gcc -shared -fPIC` would build them. */
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

#if defined(HOSTILE_CTOR_SEGV)
/* Through volatile: a store the compiler can see goes to address 0 is undefined, and gcc -O2
 * drops it (and the constructor with it). */
__attribute__((constructor)) static void hostile(void) {
  volatile int* volatile address = 0;
  *address = 1;
}
#elif defined(HOSTILE_CTOR_ABORT)
__attribute__((constructor)) static void hostile(void) {
  abort();
}
#elif defined(HOSTILE_CTOR_LOOP)
__attribute__((constructor)) static void hostile(void) {
  for (;;) {
  }
}
#elif defined(HOSTILE_CTOR_EXIT)
__attribute__((constructor)) static void hostile(void) {
  exit(0);
}
#elif defined(HOSTILE_ABI_DATA)
/* The entry point's name on data: calling it would jump into this int. */
EXPORT int rlx_plugin_abi = 42;
#elif defined(HOSTILE_ABI_POINTER)
/* A handshake answering with a pointer nobody may read. */
EXPORT const void* rlx_plugin_abi(void) {
  return (const void*)0x10;
}
#else
#error "define one HOSTILE_* case"
#endif
