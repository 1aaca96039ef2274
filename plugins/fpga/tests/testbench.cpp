// The Verilator testbench of the fpga tests: drives the generated top module (rlx_model) with
// int8 inputs from stdin and prints its int32 outputs and the cycles each inference took.
//   usage: Vrlx_model K N SEED < inputs   (one inference per line, K integers)
// SEED 0: one inference at a time, input always valid and output always ready, so the cycles
// from the first input handshake to the last output handshake are the design's latency.
// SEED > 0: every inference back to back, with in_valid and out_ready dropped at random, to
// check the handshakes: the outputs must not change.
// Output: one line per inference, "out v0 .. vN-1 cycles C" (C is 0 when streaming).
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "Vrlx_model.h"
#include "verilated.h"

namespace {

constexpr long kMaxCycles = 100'000'000;  // a design that stops handshaking ends the run

struct Bench {
  std::unique_ptr<VerilatedContext> context = std::make_unique<VerilatedContext>();
  std::unique_ptr<Vrlx_model> top = std::make_unique<Vrlx_model>(context.get());
  long cycle = 0;

  // One clock: the caller has set the inputs; eval settles the combinational outputs (ready,
  // valid, data) that decide this cycle's handshakes, then the rising edge commits them.
  void edge() {
    top->clk = 1;
    top->eval();
    top->clk = 0;
    top->eval();
    if (++cycle > kMaxCycles) {
      std::fprintf(stderr, "testbench: no progress after %ld cycles\n", kMaxCycles);
      std::exit(2);
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s K N SEED < inputs\n", argv[0]);
    return 1;
  }
  const int k = std::atoi(argv[1]), n = std::atoi(argv[2]);
  const unsigned seed = static_cast<unsigned>(std::strtoul(argv[3], nullptr, 10));
  std::vector<std::vector<int>> inputs;
  for (std::string line; std::getline(std::cin, line);) {
    std::istringstream in(line);
    std::vector<int> v;
    for (int x; in >> x;) v.push_back(x);
    if (v.empty()) continue;
    if (static_cast<int>(v.size()) != k) {
      std::fprintf(stderr, "testbench: an input line has %zu values, not %d\n", v.size(), k);
      return 1;
    }
    inputs.push_back(std::move(v));
  }

  Bench b;
  b.top->clk = 0;
  b.top->rst = 1;
  b.top->in_valid = 0;
  b.top->out_ready = 0;
  b.top->eval();
  b.edge();
  b.edge();
  b.top->rst = 0;

  std::mt19937 gen(seed);
  auto coin = [&] { return seed == 0 || gen() % 4 != 0; };  // 3 in 4 when streaming
  std::vector<std::vector<long>> outputs(inputs.size());
  std::vector<long> cycles(inputs.size(), 0);
  size_t in_sample = 0, out_sample = 0;
  int in_pos = 0;
  long first_in = -1;
  while (out_sample < inputs.size()) {
    // Sequential runs feed an inference only once the previous one is out.
    const bool may_feed = in_sample < inputs.size() && (seed != 0 || in_sample == out_sample);
    b.top->in_valid = may_feed && coin();
    b.top->in_data = may_feed ? static_cast<int8_t>(inputs[in_sample][in_pos]) : 0;
    b.top->out_ready = coin();
    b.top->eval();
    const bool in_fire = b.top->in_valid && b.top->in_ready;
    const bool out_fire = b.top->out_valid && b.top->out_ready;
    if (in_fire) {
      if (in_pos == 0) first_in = b.cycle;
      if (++in_pos == k) {
        in_pos = 0;
        ++in_sample;
      }
    }
    if (out_fire) {
      outputs[out_sample].push_back(static_cast<int32_t>(b.top->out_data));
      if (static_cast<int>(outputs[out_sample].size()) == n) {
        if (seed == 0) cycles[out_sample] = b.cycle - first_in + 1;
        ++out_sample;
      }
    }
    b.edge();
  }
  for (size_t s = 0; s < inputs.size(); ++s) {
    std::printf("out");
    for (long v : outputs[s]) std::printf(" %ld", v);
    std::printf(" cycles %ld\n", cycles[s]);
  }
  b.top->final();
  return 0;
}
