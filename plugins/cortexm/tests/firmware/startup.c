/* The firmware's own start: vector table, reset handler (copy .data, clear .bss, open the
 * semihosting handles, run main, exit through semihosting so qemu stops) and a SysTick that
 * counts wraps of its 24-bit counter. */
#include <stdint.h>
#include <stdlib.h>

extern uint32_t __etext, _sdata, _edata, _sbss, _ebss, _estack;
extern int main(void);
extern void initialise_monitor_handles(void);

volatile uint32_t rlx_fw_systick_wraps;

#define CPACR (*(volatile uint32_t*)0xE000ED88u)

void Reset_Handler(void) {
  /* Full access to coprocessors 10 and 11 (the FPU, and Helium on the M55) before any code that
   * gcc may have vectorized runs; harmless on cores built without them. */
  CPACR |= 0xFu << 20;
  __asm volatile("dsb\n isb" ::: "memory");
  const uint32_t* src = &__etext;
  for (uint32_t* d = &_sdata; d < &_edata;) *d++ = *src++;
  for (uint32_t* d = &_sbss; d < &_ebss;) *d++ = 0;
  initialise_monitor_handles();
  exit(main());
}

static void Fault_Handler(void) {
  /* A fault is a failed run: exit with a status the test reads. */
  exit(99);
}

/* newlib's init/fini arrays call these; without crti/crtn (-nostartfiles) they are ours. */
void _init(void) {}
void _fini(void) {}

void SysTick_Handler(void) {
  ++rlx_fw_systick_wraps;
}

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(&_estack),
    Reset_Handler,
    Fault_Handler,
    Fault_Handler,
    Fault_Handler,
    Fault_Handler,
    Fault_Handler,
    0,
    0,
    0,
    0,
    Fault_Handler,
    0,
    0,
    Fault_Handler,
    SysTick_Handler};
