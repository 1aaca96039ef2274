// The kinds of argument the commands declare on their CLI11 App. Each kind behaves the same in
// every command: a value is given at most once and takes exactly the next argument (even one that
// starts with '-'); a repeatable option takes one value per occurrence and never swallows the
// argument after it; a flag takes no value; an integer is checked before the command runs, with a
// message naming the option. Commands only see these functions, so CLI11 stays behind this header
// and command_line.cpp.
//
// NAMES are spelled as CLI11 takes them ("-t,--target"); VALUE is what --help shows after the
// name ("T").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "rlx/core/dtype.h"

namespace CLI {
class App;
}

namespace rlx::cli {

enum class Presence { kOptional, kRequired };

// A positional argument ("MODEL"); --help names it in the usage line only.
void add_argument(CLI::App& app, const std::string& name, std::string& into, Presence presence);

void add_value(CLI::App& app, const std::string& names, const std::string& value, std::string& into,
               const std::string& help, Presence presence = Presence::kOptional);
// Left empty when the option is not given, so the command can tell "absent" from "empty".
void add_value(CLI::App& app, const std::string& names, const std::string& value,
               std::optional<std::string>& into, const std::string& help);

// --bind a=1 --bind b=2: every value, in command-line order.
void add_repeatable(CLI::App& app, const std::string& names, const std::string& value,
                    std::vector<std::string>& into, const std::string& help);

void add_flag(CLI::App& app, const std::string& names, bool& into, const std::string& help);

// A decimal integer >= `min`; `into` keeps its default (or stays empty) when the option is not
// given.
void add_integer(CLI::App& app, const std::string& names, const std::string& value, int64_t min,
                 int64_t& into, const std::string& help);
void add_integer(CLI::App& app, const std::string& names, const std::string& value, int64_t min,
                 std::optional<int64_t>& into, const std::string& help);

// A decimal number (no locale, no hex) for which `in_range` holds; `range` says which in the
// message: "--top-p: '0' is not a number in (0, 1]". NaN and infinities are refused. `into`
// stays empty when the option is not given.
void add_number(CLI::App& app, const std::string& names, const std::string& value,
                bool (*in_range)(double), const std::string& range, std::optional<double>& into,
                const std::string& help);

// The ones several commands share. MODEL and --target are required; `purpose` says what the
// target is for: "run on", "compile for".
void add_model_argument(CLI::App& app, std::string& into);
void add_target_option(CLI::App& app, std::string& into, const std::string& purpose);
// For commands that also take a compiled folder (run, bench): left empty when not given, so the
// folder's own target applies; a model takes cpu then.
void add_target_option(CLI::App& app, std::optional<std::string>& into, const std::string& purpose);
// --graph NAME: which graph of a model with several (decoders: main, prefill, decode); default
// main.
void add_graph_option(CLI::App& app, std::string& into);

// --q8-activations: quantized products round activations to 8 bits (use_q8_activations).
void add_q8_activations_flag(CLI::App& app, bool& into);

// --precision f32|f16|bf16|amp-f16|amp-bf16: the precision policy (use_precision); f32, the
// model's own dtypes, when not given.
// --precision MODE and --allow-tf32, on every command that compiles a model.
struct PrecisionOptions {
  std::string mode;   // --precision; "" is f32
  bool tf32 = false;  // --allow-tf32
  bool empty() const { return mode.empty() && !tf32; }
};
void add_precision_option(CLI::App& app, PrecisionOptions& into);

// --kv-cache DTYPE (f32, f16 or bf16): the dtype a decoder's KV cache is kept in
// (use_kv_cache); left empty when not given.
void add_kv_cache_option(CLI::App& app, std::optional<DType>& into);

// --plugin-path and --verbose, accepted before the command name (on rlx's own App) and after it
// (on the command's); both places add to `into`.
void add_global_options(CLI::App& app, GlobalOptions& into);

}  // namespace rlx::cli
