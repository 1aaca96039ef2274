// The SystemVerilog design of an Int8Program (sdk/int8): one streaming module per dense layer, a
// top module that chains them with valid/ready handshakes, the weight and requantization ROMs as
// $readmemh files, and a README/JSON of the I/O layout. Each function here writes one of those.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "int8_program.h"
#include "rlx/core/target.h"

namespace rlx::fpga {

using int8::Layer;
using int8::Int8Program;

// The module names the design uses; the top is what a simulator or synthesis tool is given.
inline constexpr const char* kTopModule = "rlx_model";

// Multiply-accumulates per cycle in every layer when RLX_FPGA_PARALLELISM is not set: small
// enough for the smallest iCE40 parts, large enough to show the datapath's lanes.
inline constexpr int32_t kDefaultParallelism = 4;
inline constexpr int32_t kMaxParallelism = 64;

// The parallelism of the next emit: RLX_FPGA_PARALLELISM (1 to kMaxParallelism), else
// kDefaultParallelism. The plugin contract has no per-target options, hence the variable.
int32_t parallelism_from_environment();

// Weight words of one layer: ceil(k / p) words of p int8 lanes per output.
int32_t chunks_per_output(const Layer& l, int32_t p);

// The file names of layer i's module and ROMs.
std::string layer_module_name(size_t i);
std::string layer_file(size_t i);
std::string rom_file(size_t i, const char* what);  // what: "weights", "bias", "mult", "shift"

// The SystemVerilog of layer i (its ROM files named by rom_file).
std::string layer_module(const Layer& l, size_t i, int32_t p);
// The top module: the layers chained, the input and output streams at its ports.
std::string top_module(const Int8Program& prog);

// Clock cycles from the first input accepted to the last output handed over, when the output is
// always ready: what the testbench measures, computed from the state machine.
int64_t cycles_per_inference(const Int8Program& prog, int32_t p);

// Writes the $readmemh files of layer i into dir; returns their names.
std::vector<std::string> write_roms(const Layer& l, size_t i, int32_t p,
                                    const std::filesystem::path& dir);

// README.md (how to simulate and synthesize, the I/O layout) and fpga_design.json (the same
// layout for programs).
std::string design_readme(const Int8Program& prog, int32_t p);
std::string design_json(const Int8Program& prog, int32_t p);

// Everything above, written into dir.
std::vector<Artifact> write_design(const Int8Program& prog, int32_t p,
                                   const std::filesystem::path& dir);

}  // namespace rlx::fpga
