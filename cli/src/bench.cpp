// `rlx bench MODEL --target T [--inputs IN | --input NAME=VALUES | --batch N --seq S | ...]`: the
// latency of one model on one target, measured the way bench/ measures every peer: the first run
// (which compiles the model for the input shapes) and further warm-up runs are not timed, then
// each timed run is clocked on its own and the percentiles are taken over those runs.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>

#include "bindings.h"
#include "commands.h"
#include "errors.h"
#include "folder_model.h"
#include "inputs_file.h"
#include "json_out.h"
#include "model.h"
#include "options.h"
#include "batch_across_ranks.h"
#include "ranks.h"
#include "rlx/core/device_stats.h"
#include "rlx/core/half.h"
#include "rlx/core/progress.h"
#include "rlx/core/runtime.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct BenchOptions {
  std::string model, graph;
  std::optional<std::string> target;
  InputOptions inputs;
  std::optional<std::string> output, save_inputs;
  std::optional<int64_t> batch, seq;
  std::vector<std::string> bind;
  int64_t warmup = 10, runs = 50;
  bool json = false, q8_activations = false;
  PrecisionOptions precision;
  std::optional<DType> kv_cache;
  RankOptions ranks;
  std::optional<int64_t> micro_batches;
};

void declare_bench_options(CLI::App& app, BenchOptions& o) {
  add_model_argument(app, o.model);
  add_target_option(app, o.target, "run on");
  add_input_options(app, o.inputs);
  add_integer(app, "-b,--batch", "N", 1, o.batch, "made-up inputs: the size of B (batch)");
  add_integer(app, "-s,--seq", "S", 1, o.seq, "made-up inputs: the size of S (sequence length)");
  add_bind_option(app, o.bind, "made-up inputs: the size of another symbolic dim");
  add_integer(app, "--warmup", "N", 1, o.warmup,
              "untimed runs first, the compiling one included (default 10, >= 1)");
  add_integer(app, "-n,--runs", "N", 1, o.runs, "timed runs (default 50)");
  add_value(app, "-o,--output", "OUT.safetensors", o.output,
            "write the outputs of the last run (to check them)");
  add_value(app, "--save-inputs", "FILE.safetensors", o.save_inputs,
            "write the inputs the runs used (made up or given), to run them again");
  add_flag(app, "--json", o.json,
           "print {\"p50_ms\", \"p90_ms\", \"compile_ms\", \"peak_rss_mb\", min/mean/max, ...}");
  add_graph_option(app, o.graph);
  add_q8_activations_flag(app, o.q8_activations);
  add_precision_option(app, o.precision);
  add_kv_cache_option(app, o.kv_cache);
  add_rank_options(app, o.ranks);
  add_micro_batches_option(app, o.micro_batches);
}

// q-th percentile (0..100) with linear interpolation between the two nearest ranks: NumPy's
// default, which bench/ uses for every peer, so the columns mean the same thing.
double percentile(std::vector<double> sorted, double q) {
  std::sort(sorted.begin(), sorted.end());  // a copy: the caller's order is kept
  const double pos = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

// Peak resident set of this process so far, in MB (10^6 bytes): model, weights, compiled code
// and the buffers of the runs. VmHWM belongs to this program image; getrusage's ru_maxrss does
// not: Linux carries it over an exec from the process that forked us (a Python driver holding
// a gigabyte would show as our peak), so it is only the fallback where /proc is missing.
double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024.0 / 1e6;  // kB
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0 / 1e6;  // KiB on Linux
}

std::string bind_option_name(const std::string& name) {
  return "--bind " + name;
}

// Sizes for the graph's symbols from --batch (B), --seq (S) and --bind NAME=SIZE (`binds`, which
// the importer has seen: it may have fixed some of them).
Bindings sizes_from_options(const BenchOptions& o, const Graph& graph, const Model& model,
                            const Bindings& binds) {
  Bindings sizes = sizes_for_graph(binds, graph, model, &bind_option_name);
  const std::vector<std::string> symbols = graph.symbols();
  auto set = [&](const std::string& name, int64_t value, const std::string& option) {
    if (std::find(symbols.begin(), symbols.end(), name) == symbols.end())
      throw CliError(fmt::format("{}: the model has no symbolic dim '{}' ({})", option, name,
                                 symbols.empty() ? "its input shapes are all static"
                                                 : "its symbols: " + unsized_symbols({}, graph)),
                     "give sizes only for the symbols of the model's input shapes");
    if (!sizes.emplace(name, value).second)
      throw UsageError(fmt::format("the size of '{}' is given twice", name), usage_hint("bench"));
  };
  if (o.batch) set("B", *o.batch, "--batch");
  if (o.seq) set("S", *o.seq, "--seq");
  if (std::string missing = unsized_symbols(sizes, graph); !missing.empty()) {
    std::string example;
    for (const auto& s : symbols)
      if (!sizes.count(s))
        example += s == "B"   ? " --batch <size>"
                   : s == "S" ? " --seq <size>"
                              : fmt::format(" --bind {}=<size>", s);
    throw CliError(
        fmt::format("without --inputs or --input every symbolic dim needs a size; missing: {}",
                    missing),
        fmt::format("add{}, or give the inputs (--inputs IN, --input NAME=VALUES)", example));
  }
  return sizes;
}

// Deterministic inputs for a timing run: the values do not change the work of a dense model,
// but they must be valid. Floats are uniform in [-1, 1); attention_mask is all ones; input_ids
// are spread over the vocabulary when the model states its size (zeros otherwise, always a
// valid id); inputs named like positions count 0, 1, ... along their last axis; everything else
// is zero (token types, a decode step's position, other dtypes).
NamedTensors synthesize_inputs(const Graph& graph, const Model& model, const Bindings& sizes) {
  int64_t vocab = 1;
  if (auto it = model.metadata.find("vocab_size"); it != model.metadata.end())
    vocab = std::max<int64_t>(1, std::stoll(it->second));
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&state] {  // splitmix64: reproducible on every platform
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  NamedTensors inputs;
  for (ValueId v : graph.inputs) {
    const Value& value = graph.values[v];
    std::vector<int64_t> shape = static_dims(bind_shape(value.type.shape, sizes));
    Tensor t(value.type.dtype, shape);
    const DType dt = value.type.dtype;
    const int64_t n = t.numel();
    const int64_t last = shape.empty() ? 1 : std::max<int64_t>(1, shape.back());
    auto uniform = [&] {
      return static_cast<float>(next() >> 40) / static_cast<float>(1 << 23) - 1.0f;
    };
    if (dt == DType::kF32) {
      for (int64_t i = 0; i < n; ++i) t.as<float>()[i] = uniform();
    } else if (dt == DType::kF16 || dt == DType::kBF16) {  // a 16-bit KV cache (--kv-cache)
      for (int64_t i = 0; i < n; ++i)
        t.as<uint16_t>()[i] = dt == DType::kF16 ? f32_to_f16(uniform()) : f32_to_bf16(uniform());
    } else if (dt == DType::kI64 || dt == DType::kI32) {
      const std::string& name = value.name;
      auto put = [&](int64_t i, int64_t x) {
        if (dt == DType::kI64)
          t.as<int64_t>()[i] = x;
        else
          t.as<int32_t>()[i] = static_cast<int32_t>(x);
      };
      const bool ids = name == "input_ids" || name == "ids";
      const bool positions = name.find("position") != std::string::npos && name != "position";
      for (int64_t i = 0; i < n; ++i)
        put(i, name == "attention_mask" ? 1
               : ids       ? static_cast<int64_t>(next() % static_cast<uint64_t>(vocab))
               : positions ? i % last
                           : 0);
    }  // anything else stays zero, a valid value of every dtype
    inputs.emplace(value.name, t);
  }
  return inputs;
}

json::Value jnumber(double v, int decimals) {
  return json::Value{json::Number{v, fmt::format("{:.{}f}", v, decimals)}};
}

int bench_main(const BenchOptions& o, const GlobalOptions& global) {
  const std::string& model_path = o.model;
  double compile_call_ms = 0;  // the compile call, or for a compiled folder its load
  const int64_t warmup = o.warmup;
  const int64_t runs = o.runs;
  const bool sized = o.batch || o.seq || !o.bind.empty();
  if (o.inputs.given() && sized)
    throw UsageError(
        "give either inputs (--inputs, --input) or sizes to make inputs up (--batch, --seq, "
        "--bind)",
        usage_hint("bench"));
  const std::optional<fs::path> output = writable_path(o.output, "--output");
  const std::optional<fs::path> save_inputs = writable_path(o.save_inputs, "--save-inputs");
  if (save_inputs && save_inputs->extension() != ".safetensors")
    throw CliError(fmt::format("--save-inputs {}: the inputs are written as safetensors",
                               save_inputs->string()),
                   "name the file *.safetensors (rlx run and bench read it back with --inputs)");

  const Bindings binds = parse_bind_specs(o.bind, 1);
  if (std::optional<int> code = launch_ranks(o.ranks)) return *code;
  std::shared_ptr<Channel> channel;  // the ranks' collectives, while the runs last
  BatchPlan plan;                    // the batch over replicas and micro-batches

  // A compiled folder (`rlx compile -o DIR`) is loaded instead of compiled: its load time is
  // measured as a model's compile time is, and reported next to the compile time it recorded.
  const bool folder = registry::is_compiled_folder(model_path);
  // Progress counts the compile (or load) and warm-up runs, then the timed runs; reporting a step
  // costs a lock, outside the clocked interval.
  std::optional<progress::Task> task;
  task.emplace("bench: compile and warm-up runs", warmup);
  std::optional<registry::CompiledFolder> loaded;
  std::optional<CompiledModel> compiled;
  Model model;
  Graph folder_graph;
  std::string target_name = o.target.value_or("cpu");
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  GivenInputs given = read_inputs(
      o.inputs, [&](const fs::path& folder) { return read_input_folder(reg, model_path, folder); });
  std::vector<std::string> frozen;
  if (folder) {
    refuse_compile_option(o.graph != "main", "--graph", model_path);
    refuse_compile_option(o.q8_activations, "--q8-activations", model_path);
    refuse_compile_option(!o.precision.empty(), "--precision", model_path);
    refuse_compile_option(o.kv_cache.has_value(), "--kv-cache", model_path);
    refuse_compile_option(o.ranks.tp.has_value(), "--tp", model_path);
    refuse_compile_option(o.ranks.pp.has_value(), "--pp", model_path);
    refuse_compile_option(o.micro_batches.has_value(), "--micro-batches", model_path);
    loaded = load_compiled_folder(global, model_path, o.target);
    target_name = loaded->target_name();
    folder_graph = folder_inputs_graph(*loaded);
  } else {
    std::shared_ptr<Target> target = choose_target(reg, target_name);
    target_name = target->name();  // --target auto names one
    require_can_execute(*target, target_name, model_path);
    channel = join_ranks(*target, o.ranks, &reg);
    model = load_model_shard(reg, model_path, o.ranks,
                             o.inputs.given() ? import_options_for(given) : import_options_for(binds),
                             /*copies=*/true);
    frozen = take_frozen_inputs(model, given);
    if (o.q8_activations) use_q8_activations(model, model_path);
    use_precision(model, o.precision, model_path);
    if (o.kv_cache) use_kv_cache(model, o.graph, *o.kv_cache, model_path);
    plan = plan_batch(model, o.graph, o.micro_batches, o.ranks, channel.get());
    auto t0 = Clock::now();
    Session session(target);
    compiled = session.compile(model, o.graph);
    compile_call_ms = ms_since(t0);
  }
  const std::string& graph_name = o.graph;
  const Graph& graph = folder ? folder_graph : model.graph(graph_name);
  NamedTensors inputs =
      o.inputs.given()
          ? match_inputs(graph, given)
          : synthesize_inputs(graph, model, sizes_from_options(o, graph, model, binds));
  if (save_inputs) write_safetensors(*save_inputs, TensorMap(inputs.begin(), inputs.end()));
  auto run_once = [&](NamedTensors& outputs) {
    if (loaded)
      loaded->run(inputs, outputs);
    else if (plan.splits())
      outputs = run_batch(*compiled, graph, inputs, plan, *channel);
    else
      compiled->run(inputs, outputs);
  };
  // A target whose device counts its memory (cuda, vulkan) says its peak device memory; one that
  // keeps a clock (cuda) also how long each run took on the device (inputs in, kernels, out).
  const DeviceStatsV1* stats = device_stats(*reg.target(target_name));
  const bool device_clock = stats && stats->clock_start && stats->clock_stop;

  if (loaded) compile_call_ms = loaded->load_ms();
  auto t0 = Clock::now();
  NamedTensors outputs;
  run_once(outputs);
  const double first_run_ms = ms_since(t0);
  task->advance();
  // Later runs write into the same outputs, as a serving loop would: steady state allocates
  // nothing (peers that return fresh tensors pay their allocator in their figures, as they
  // would in use).
  for (int64_t i = 1; i < warmup; ++i) {
    run_once(outputs);
    task->advance();
  }

  task.reset();
  task.emplace("bench: timed runs", runs);
  std::vector<double> times, device_times;
  times.reserve(static_cast<size_t>(runs));
  for (int64_t i = 0; i < runs; ++i) {
    if (device_clock) check_device_stats(stats->clock_start(stats->context), target_name);
    t0 = Clock::now();
    run_once(outputs);
    times.push_back(ms_since(t0));
    if (device_clock) {
      double ms = 0;
      check_device_stats(stats->clock_stop(stats->context, &ms), target_name);
      device_times.push_back(ms);
    }
    task->advance();
  }
  task.reset();
  const double p50 = percentile(times, 50), p90 = percentile(times, 90);
  const double mean = std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(runs);
  const double fastest = *std::min_element(times.begin(), times.end());
  const double slowest = *std::max_element(times.begin(), times.end());
  // What the first call costs beyond a steady-state run: every peer in bench/ is measured so.
  // For a folder, what it took to be ready: the load, plus the first run beyond p50.
  const double compile_ms = compile_call_ms + std::max(0.0, first_run_ms - p50);
  const double rss = peak_rss_mb();
  std::optional<double> device_p50, device_peak_mb;
  if (device_clock) device_p50 = percentile(device_times, 50);
  if (stats && stats->memory) {
    uint64_t now = 0, peak = 0;
    check_device_stats(stats->memory(stats->context, &now, &peak), target_name);
    device_peak_mb = static_cast<double>(peak) / 1e6;
  }
  if (output) write_safetensors(*output, TensorMap(outputs.begin(), outputs.end()));

  std::string shapes;
  for (ValueId v : graph.inputs) {
    const Tensor& t = inputs.at(graph.values[v].name);
    shapes += fmt::format("{}{} {}{}", shapes.empty() ? "" : ", ", graph.values[v].name,
                          dtype_name(t.dtype()), t.shape_str());
  }
  const std::optional<DType> kv_cache = o.kv_cache;  // `o` is the JSON object below
  if (o.json) {
    json::Object input_json;
    for (ValueId v : graph.inputs) {
      const Tensor& t = inputs.at(graph.values[v].name);
      input_json.emplace_back(graph.values[v].name,
                              jstring(std::string(dtype_name(t.dtype())) + t.shape_str()));
    }
    json::Object o{{"p50_ms", jms(p50)},
                   {"p90_ms", jms(p90)},
                   {loaded ? "load_ms" : "compile_ms", jms(compile_ms)},
                   {"peak_rss_mb", jnumber(rss, 1)},
                   {"min_ms", jms(fastest)},
                   {"mean_ms", jms(mean)},
                   {"max_ms", jms(slowest)},
                   {"first_run_ms", jms(first_run_ms)},
                   {"warmup", jint(warmup)},
                   {"runs", jint(runs)},
                   {"target", jstring(target_name)},
                   {"graph", jstring(graph_name)},
                   {"inputs", json::Value{std::move(input_json)}}};
    if (device_p50) o.emplace_back("device_p50_ms", jms(*device_p50));
    if (device_peak_mb) o.emplace_back("peak_device_mb", jnumber(*device_peak_mb, 1));
    if (loaded) {  // the compile time the folder recorded, next to its load time
      o.emplace_back("compile_ms", jms(loaded->compile_ms()));
      o.emplace_back("compiled_folder", jstring(model_path));
    }
    if (!frozen.empty()) {
      json::Array frozen_json;
      for (const std::string& name : frozen) frozen_json.push_back(jstring(name));
      o.emplace_back("frozen_inputs", json::Value{std::move(frozen_json)});
    }
    if (kv_cache) o.emplace_back("kv_cache", jstring(std::string(dtype_name(*kv_cache))));
    if (output) o.emplace_back("output", jstring(output->string()));
    if (save_inputs) o.emplace_back("saved_inputs", jstring(save_inputs->string()));
    std::fputs((to_json_text(json::Value{std::move(o)}) + "\n").c_str(), stdout);
    return 0;
  }
  auto plural = [](int64_t n, const char* what) {
    return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
  };
  std::string text = fmt::format(
      "{} ({} graph) on {}: {} after {}\n"
      "  inputs            {}\n"
      "{}"
      "  p50               {:10.3f} ms\n"
      "  p90               {:10.3f} ms\n"
      "  min / mean / max  {:10.3f} / {:.3f} / {:.3f} ms\n"
      "{}"
      "{}"
      "  peak RSS          {:10.1f} MB\n"
      "{}",
      model_path, graph_name, target_name, plural(runs, "timed run"), plural(warmup, "warm-up run"),
      shapes, o.kv_cache ? fmt::format("  KV cache          {}\n", dtype_name(*o.kv_cache)) : "",
      p50, p90, fastest, mean, slowest,
      device_p50 ? fmt::format("  p50 on the device {:10.3f} ms  (the device's clock: inputs in, "
                               "kernels, outputs out)\n",
                               *device_p50)
                 : std::string(),
      loaded ? fmt::format("  load              {:10.3f} ms  (load call + first run beyond p50; "
                           "compiled in {:.3f} ms)\n",
                           compile_ms, loaded->compile_ms())
             : fmt::format("  compile           {:10.3f} ms  (compile call + first run beyond "
                           "p50)\n",
                           compile_ms),
      rss,
      device_peak_mb ? fmt::format("  peak device mem   {:10.1f} MB\n", *device_peak_mb)
                     : std::string());
  if (output) text += fmt::format("wrote the outputs of the last run to {}\n", output->string());
  if (save_inputs) text += fmt::format("wrote the inputs to {}\n", save_inputs->string());
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace

Command bench_command() {
  return make_command<BenchOptions>(
      {"bench", "measure a model's latency on a target (p50, p90, compile time, peak memory)",
       "MODEL|DIR [--target T] [--inputs IN | --input NAME=VALUES | --batch N --seq S |\n"
       "       --bind NAME=SIZE]... [--graph NAME] [--kv-cache f32|f16|bf16] [--warmup 10]\n"
       "       [--runs 50] [--output OUT.safetensors] [--save-inputs FILE.safetensors] [--json]",
       "Compiles MODEL for target T (default cpu), runs it once (compiling it for the input "
       "shapes) and\n"
       "WARMUP-1 more times untimed, then RUNS times, clocking each run. Prints the median (p50)\n"
       "and 90th percentile (p90) of those runs, linearly interpolated as NumPy does; compile_ms\n"
       "(the compile call plus what the first run took beyond p50: dispatch, passes, lowering "
       "and\n"
       "the target's code generation); and the process's peak resident memory in MB (10^6 "
       "bytes).\n"
       "Where the target's device counts its memory (cuda, vulkan) it also prints the most\n"
       "device memory the target held (weights, arenas, caches, cuBLASLt's workspace;\n"
       "peak_device_mb), and where it keeps a clock (cuda) the p50 of each timed run on the\n"
       "device's clock (CUDA events around the run: inputs in, kernels, outputs out;\n"
       "device_p50_ms).\n"
       "Inputs are given as `rlx run` takes them (--inputs IN: .safetensors, .npz or .json;\n"
       "--input NAME=1,2,3 with --input-shape NAME=2x8, or NAME=@x.npy), or are made up from\n"
       "sizes for the symbolic dims: --batch binds B, --seq binds S, --bind any other\n"
       "(a decoder's decode graph: --bind T=CAPACITY, and --kv-cache f16 to keep its cache in\n"
       "f16). Made-up inputs are deterministic: floats uniform in [-1, 1), input_ids spread over\n"
       "the vocabulary, attention_mask ones, positions 0, 1, ...; anything else zero.\n"
       "--save-inputs writes the inputs used, so `rlx run MODEL --inputs FILE` can check the\n"
       "outputs of exactly those. bench/ in the source tree races rlx against other runtimes\n"
       "with this command.\n"
       "DIR, a folder `rlx compile -o DIR` wrote, is loaded instead of compiled (on the target\n"
       "it was compiled for): load_ms replaces compile_ms, which then is the compile time the\n"
       "folder recorded. Its input shapes were fixed when compiling."},
      &declare_bench_options, &bench_main);
}

}  // namespace rlx::cli
