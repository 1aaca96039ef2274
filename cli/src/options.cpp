#include "options.h"

#include <fmt/format.h>

#include <CLI/App.hpp>
#include <charconv>
#include <cmath>
#include <functional>

#include "rlx/core/error.h"
#include "rlx/core/precision.h"

namespace rlx::cli {
namespace {

std::optional<int64_t> parse_integer(const std::string& text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// -o=DIR means -o DIR, as it did before CLI11, which reads the value "=DIR" (as from -oDIR). No
// value of an option with a short name (a target, a path, a count) starts with '='.
CLI::Option* allow_short_equals(CLI::Option* option) {
  if (option->get_snames().empty()) return option;
  return option->transform(CLI::Validator(
      [](std::string& value) {
        if (value.starts_with('=')) value.erase(0, 1);
        return std::string();
      },
      ""));
}

// One value per occurrence, handed to `each` in command-line order. CLI11 gives a vector option
// every following argument that does not look like an option; --bind a=1 MODEL must not make
// MODEL a binding, hence allow_extra_args(false).
void add_each(CLI::App& app, const std::string& names, const std::string& value,
              const std::string& help, std::function<void(const std::string&)> each) {
  app.add_option_function<std::vector<std::string>>(
         names,
         [each = std::move(each)](const std::vector<std::string>& values) {
           for (const std::string& v : values) each(v);
         },
         help + " (repeatable)")
      ->type_name(value)
      ->allow_extra_args(false);
}

// Checked and converted here rather than by CLI11, whose integer conversion reads 010 as octal.
// CLI11 puts the option's name before the message: "--runs: '0' is not an integer >= 1".
void add_checked_integer(CLI::App& app, const std::string& names, const std::string& value,
                         int64_t min, const std::string& help, std::function<void(int64_t)> set) {
  CLI::Validator at_least(
      [min](std::string& text) -> std::string {
        if (std::optional<int64_t> v = parse_integer(text); v && *v >= min) return {};
        return min == 0 ? fmt::format("'{}' is not a non-negative integer", text)
                        : fmt::format("'{}' is not an integer >= {}", text, min);
      },
      "");
  allow_short_equals(
      app.add_option_function<std::string>(
          names, [set = std::move(set)](const std::string& text) { set(*parse_integer(text)); },
          help))
      ->type_name(value)
      ->check(at_least);
}

std::optional<double> parse_number(const std::string& text) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

}  // namespace

void add_number(CLI::App& app, const std::string& names, const std::string& value,
                bool (*in_range)(double), const std::string& range, std::optional<double>& into,
                const std::string& help) {
  CLI::Validator check(
      [in_range, range](std::string& text) -> std::string {
        if (std::optional<double> v = parse_number(text); v && in_range(*v)) return {};
        return fmt::format("'{}' is not a number {}", text, range);
      },
      "");
  allow_short_equals(
      app.add_option_function<std::string>(
          names, [&into](const std::string& text) { into = *parse_number(text); }, help))
      ->type_name(value)
      ->check(check);
}

void add_argument(CLI::App& app, const std::string& name, std::string& into, Presence presence) {
  app.add_option(name, into)->required(presence == Presence::kRequired);
}

void add_value(CLI::App& app, const std::string& names, const std::string& value, std::string& into,
               const std::string& help, Presence presence) {
  allow_short_equals(app.add_option(names, into, help))
      ->type_name(value)
      ->required(presence == Presence::kRequired);
}

void add_value(CLI::App& app, const std::string& names, const std::string& value,
               std::optional<std::string>& into, const std::string& help) {
  allow_short_equals(app.add_option_function<std::string>(
                         names, [&into](const std::string& v) { into = v; }, help))
      ->type_name(value);
}

void add_repeatable(CLI::App& app, const std::string& names, const std::string& value,
                    std::vector<std::string>& into, const std::string& help) {
  add_each(app, names, value, help, [&into](const std::string& v) { into.push_back(v); });
}

void add_flag(CLI::App& app, const std::string& names, bool& into, const std::string& help) {
  // --json=no would otherwise be read as "false"; a flag takes no value, and twice is a slip.
  app.add_flag(names, into, help)
      ->disable_flag_override()
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
}

void add_integer(CLI::App& app, const std::string& names, const std::string& value, int64_t min,
                 int64_t& into, const std::string& help) {
  add_checked_integer(app, names, value, min, help, [&into](int64_t v) { into = v; });
}

void add_integer(CLI::App& app, const std::string& names, const std::string& value, int64_t min,
                 std::optional<int64_t>& into, const std::string& help) {
  add_checked_integer(app, names, value, min, help, [&into](int64_t v) { into = v; });
}

void add_model_argument(CLI::App& app, std::string& into) {
  add_argument(app, "MODEL", into, Presence::kRequired);
}

void add_target_option(CLI::App& app, std::string& into, const std::string& purpose) {
  into = "cpu";
  add_value(
      app, "-t,--target", "T", into,
      fmt::format("the target to {} (default cpu; auto: the fastest here, said on stderr; see "
                  "`rlx --list-targets`)",
                  purpose));
}

void add_target_option(CLI::App& app, std::optional<std::string>& into,
                       const std::string& purpose) {
  add_value(app, "-t,--target", "T", into,
            fmt::format("the target to {} (default cpu, or for a compiled folder the one it was "
                        "built for; auto: the fastest here, said on stderr; see "
                        "`rlx --list-targets`)",
                        purpose));
}

void add_graph_option(CLI::App& app, std::string& into) {
  into = "main";
  add_value(app, "-g,--graph", "NAME", into,
            "the graph of MODEL to use (default main; decoders also have prefill and decode)");
}

void add_global_options(CLI::App& app, GlobalOptions& into) {
  add_each(app, "--plugin-path", "DIR", "search DIR for plugins before any other folder",
           [&into](const std::string& dir) { into.plugin_paths.emplace_back(dir); });
  add_flag(app, "-v,--verbose", into.verbose,
           "more detail: per-plugin details in listings, where an error arose");
  add_flag(app, "-q,--quiet", into.quiet,
           "no progress line and no notes on stderr (which target --target auto chose, a "
           "software device); errors are still printed");
}

void add_q8_activations_flag(CLI::App& app, bool& into) {
  add_flag(app, "--q8-activations", into,
           "quantized (GGUF block) weights multiply activations rounded to 8-bit blocks, as "
           "llama.cpp does: its arithmetic, logits about 1% off the exact product");
}

void add_precision_option(CLI::App& app, PrecisionOptions& into) {
  CLI::Validator mode(
      [](std::string& text) -> std::string {
        try {
          parse_precision(text);
          return {};
        } catch (const Error&) {
          return fmt::format("'{}' is not a precision: give {}", text, kPrecisionChoices);
        }
      },
      "f32|f16|bf16|amp-f16|amp-bf16");
  app.add_flag("--allow-tf32", into.tf32,
               "let f32 products round their operands to TF32 (10-bit mantissa, f32 accumulation) "
               "where the target has TF32 tensor cores (cuda); `rlx explain --allow-tf32` lists "
               "them");
  app.add_option("--precision", into.mode,
                 "compute in f32 (the model's own dtypes; default), f16 or bf16 (every op), or "
                 "amp-f16 / amp-bf16 (products, convolutions and attention narrow, the rest f32); "
                 "inputs and outputs stay f32, and `rlx explain --precision` lists each change")
      ->type_name("MODE")
      ->check(mode);
}

void add_kv_cache_option(CLI::App& app, std::optional<DType>& into) {
  CLI::Validator cache_dtype(
      [](std::string& text) -> std::string {
        if (text == "f32" || text == "f16" || text == "bf16") return {};
        return fmt::format("'{}' is not a KV cache dtype: give f32 (the default), f16 or bf16",
                           text);
      },
      "");
  app.add_option_function<std::string>(
         "--kv-cache", [&into](const std::string& text) { into = *parse_dtype(text); },
         "keep a decoder's KV cache in DTYPE: f32 (default), f16 or bf16 halve its memory and "
         "what attention reads per token, at about 3 (f16) or 2 (bf16) decimal digits per "
         "cached key and value")
      ->type_name("DTYPE")
      ->check(cache_dtype);
}

}  // namespace rlx::cli
