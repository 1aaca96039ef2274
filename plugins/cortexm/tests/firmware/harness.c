/* Runs the generated model on every embedded test input, prints each int32 output row
 * ("o v0 v1 ...") and the instructions one inference takes. Instructions are measured with
 * SysTick on the core clock under qemu -icount, calibrated against a loop of known length, so
 * the board's clock frequency does not matter. */
#include <stdint.h>
#include <stdio.h>

#include "inputs.h"
#include "model.h"

#define SYST_CSR (*(volatile uint32_t*)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t*)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t*)0xE000E018u)

extern volatile uint32_t rlx_fw_systick_wraps;

static int8_t arena[RLX_MODEL_ARENA_BYTES] __attribute__((aligned(4)));
static rlx_model_output_t outputs[RLX_FW_SAMPLES][RLX_MODEL_OUTPUT_SIZE];

static uint64_t ticks(void) {
  uint32_t w, v;
  do {
    w = rlx_fw_systick_wraps;
    v = SYST_CVR;
  } while (w != rlx_fw_systick_wraps);
  return (uint64_t)w * 0x1000000u + (0xFFFFFFu - v);
}

/* Two instructions an iteration (subs, bne). */
static void spin(uint32_t n) {
  __asm volatile("1: subs %0, %0, #1\n bne 1b" : "+r"(n));
}

int main(void) {
  SYST_RVR = 0xFFFFFFu;
  SYST_CVR = 0;
  SYST_CSR = 7; /* enable, interrupt on wrap, core clock */
  spin(100);    /* the first tick loads the reload value: measure after it */
  const uint32_t spins = 1000000u;
  uint64_t t0 = ticks();
  spin(spins);
  uint64_t calib = ticks() - t0;
  t0 = ticks();
  for (int s = 0; s < RLX_FW_SAMPLES; ++s) rlx_model_run(rlx_fw_inputs[s], outputs[s], arena);
  uint64_t spent = ticks() - t0;
  for (int s = 0; s < RLX_FW_SAMPLES; ++s) {
    printf("o");
    for (int n = 0; n < RLX_MODEL_OUTPUT_SIZE; ++n) printf(" %ld", (long)outputs[s][n]);
    printf("\n");
  }
  /* instructions = ticks * (2 * spins / calib); one inference = that / samples. */
  unsigned long long per = calib ? (spent * 2ull * spins) / (calib * (uint64_t)RLX_FW_SAMPLES) : 0;
  printf("insn_per_inference %llu\n", per);
  printf("ticks calibration %lu inference %lu\n", (unsigned long)calib, (unsigned long)spent);
  return 0;
}
