#include "rlx/llm/decoding.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>

#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/input_limits.h"

namespace rlx::llm {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Copies the prompt's keys or values [B, H, S, D] into slots 0..S-1 of a zeroed [B, H, T, D]
// cache of `dtype`; slots past the current position are masked out by the decode graph. Prefill
// returns f32 keys and values whatever the decode graph keeps: a 16-bit cache gets them rounded
// as the decode graph rounds each new step's (set_kv_cache_dtype).
Tensor cache_from_prompt(const Tensor& present, int64_t capacity, DType dtype,
                         const std::string& name) {
  const auto& s = present.shape();
  Tensor cache(dtype, {s[0], s[1], capacity, s[3]});
  const int64_t rows = s[0] * s[1], row = s[2] * s[3], cap_row = capacity * s[3];
  if (present.dtype() == dtype) {
    const size_t size = dtype_size(dtype);
    auto* dst = static_cast<char*>(cache.data());
    const auto* src = static_cast<const char*>(present.data());
    for (int64_t bh = 0; bh < rows; ++bh)
      std::memcpy(dst + bh * cap_row * size, src + bh * row * size, row * size);
    return cache;
  }
  if (present.dtype() != DType::kF32 || (dtype != DType::kF16 && dtype != DType::kBF16))
    throw_user_error(fmt::format(
        "prefill returns {} as {}, and the decode graph keeps it as {}: rlx converts an f32 "
        "prefill cache to f16 or bf16 only",
        name, dtype_name(present.dtype()), dtype_name(dtype)));
  uint16_t (*round)(float) = dtype == DType::kF16 ? &f32_to_f16 : &f32_to_bf16;
  const float* src = present.as<float>();
  auto* dst = cache.as<uint16_t>();
  for (int64_t bh = 0; bh < rows; ++bh)
    for (int64_t i = 0; i < row; ++i) dst[bh * cap_row + i] = round(src[bh * row + i]);
  return cache;
}

// For models without max_position_embeddings: far beyond any trained context, and small enough
// that the cache's size arithmetic cannot overflow.
constexpr int64_t kMaxPositions = int64_t{1} << 24;

}  // namespace

std::set<int64_t> end_of_text_ids(const Model& model) {
  std::set<int64_t> ids;
  auto it = model.metadata.find("eos_token_ids");
  if (it == model.metadata.end()) return ids;
  const std::string& text = it->second;
  for (size_t start = 0; start < text.size();) {
    size_t end = std::min(text.find(',', start), text.size());
    int64_t v = -1;
    auto [p, ec] = std::from_chars(text.data() + start, text.data() + end, v);
    if (ec != std::errc() || p != text.data() + end || v < 0)
      throw Error(
          ErrorKind::kUser,
          fmt::format("the model's eos_token_ids metadata '{}' is not a list of token ids", text));
    ids.insert(v);
    start = end + 1;
  }
  return ids;
}

std::span<const float> last_row(const Tensor& logits, int64_t row) {
  const auto& s = logits.shape();
  if (logits.dtype() != DType::kF32 || s.size() != 3)
    throw_user_error(fmt::format("logits must be f32[B, S, vocab], got {}{}",
                                 dtype_name(logits.dtype()), logits.shape_str()));
  return {logits.as<float>() + (row * s[1] + s[1] - 1) * s[2], static_cast<size_t>(s[2])};
}

int64_t argmax_last(const Tensor& logits, int64_t row) {
  const auto& s = logits.shape();
  const float* p = last_row(logits, row).data();
  int64_t best = 0;
  for (int64_t i = 0; i < s[2]; ++i) {
    // A NaN compares false with everything, so the loop would pick token 0 and print it as if the
    // model had chosen it: a wrong answer with exit 0. Say so instead.
    if (std::isnan(p[i]))
      throw Error(
          ErrorKind::kUser,
          fmt::format(
              "the model's logits are NaN (vocabulary entry {} of sequence {}): the weights "
              "or the config produce NaN (check epsilons and rope bases); no token is "
              "chosen from them",
              i, row));
    if (p[i] > p[best]) best = i;
  }
  return best;
}

Decoder::Decoder(const Model& model, std::shared_ptr<Target> target) {
  for (const char* name : {"prefill", "decode"})
    if (!model.graphs.count(name))
      throw_user_error(
          fmt::format("the {} model has no '{}' graph: generation needs a decoder "
                      "model (qwen3, llama, gemma3)",
                      model.architecture, name));
  const Graph& decode = model.graph("decode");
  for (ValueId v : decode.inputs) {
    const std::string& name = decode.values[v].name;
    if (name.rfind("past_", 0) == 0) {
      cache_names_.push_back(name);
      cache_dtypes_.push_back(decode.values[v].type.dtype);
    }
  }
  for (const InputLimit& l : input_limits(model))
    if (l.input == "position" && l.dim < 0) {
      context_ = l.max + 1;
      context_reason_ = l.reason;
    }
  auto t0 = Clock::now();
  Session session(std::move(target));
  prefill_ = session.compile(model, "prefill");
  decode_ = session.compile(model, "decode");
  compile_seconds_ = since(t0);
}

DecodeResult Decoder::run(const Tensor& prompt, const DecodeOptions& options) {
  if (prompt.dtype() != DType::kI64 || prompt.rank() != 2 || prompt.shape()[1] < 1)
    throw_user_error(fmt::format("the prompt must be i64[batch, length >= 1], got {}{}",
                                 dtype_name(prompt.dtype()), prompt.shape_str()));
  const int64_t batch = prompt.shape()[0], len = prompt.shape()[1];
  DecodeResult r;
  r.compile_seconds = compile_seconds_;
  r.tokens.resize(static_cast<size_t>(batch));
  r.stop_reasons.assign(static_cast<size_t>(batch), StopReason::kLength);
  if (options.max_new_tokens <= 0) return r;
  // The cache holds every position, so the length is bounded before it sizes anything (a huge
  // max_new_tokens would overflow the capacity or ask for the machine's memory).
  int64_t total = 0;
  const bool overflow = __builtin_add_overflow(len, options.max_new_tokens, &total);
  if (overflow || total > kMaxPositions || (context_ > 0 && total > context_))
    throw_user_error(fmt::format(
        "a prompt of {} tokens and max_new_tokens {} need {} positions, more than the model "
        "takes ({}); ask for at most {} new tokens",
        len, options.max_new_tokens,
        overflow ? std::string("more than 2^63") : std::to_string(total),
        context_ > 0 ? fmt::format("{}, {}", context_, context_reason_)
                     : fmt::format("{}, rlx's limit for a model that does not say", kMaxPositions),
        std::max<int64_t>(0, (context_ > 0 ? context_ : kMaxPositions) - len)));
  // Capacities come in steps of kCapacityStep, so prompts of nearby lengths share one decode
  // specialisation (and its compiled kernels in the cache); slots past the position are masked
  // and the attention kernel skips them.
  r.cache_capacity =
      (len + options.max_new_tokens + kCapacityStep - 1) / kCapacityStep * kCapacityStep;
  if (!cache_dtypes_.empty()) r.cache_dtype = cache_dtypes_[0];

  auto t0 = Clock::now();
  NamedTensors out = prefill_.run({{"input_ids", prompt}});
  r.prefill_seconds = since(t0);
  for (size_t i = 0; i < cache_names_.size(); ++i) {
    const auto& s = out.at("present_" + cache_names_[i].substr(5)).shape();
    if (s.size() == 4)
      r.cache_bytes += s[0] * s[1] * r.cache_capacity * s[3] *
                       static_cast<int64_t>(dtype_size(cache_dtypes_[i]));
  }

  std::vector<bool> done(static_cast<size_t>(batch), false);
  Tensor next(DType::kI64, {batch, 1});
  // Greedy without a penalty stays on argmax_last, whose error names the row; everything else
  // goes through the sampler, which sees each row's ids so far for the repetition penalty.
  Sampler sampler(options.sampling);
  const bool plain_greedy = sampler.greedy() && options.sampling.repetition_penalty == 1;
  std::vector<std::vector<int64_t>> seen;
  if (!plain_greedy)
    for (int64_t b = 0; b < batch; ++b)
      seen.emplace_back(prompt.as<int64_t>() + b * len, prompt.as<int64_t>() + (b + 1) * len);
  auto take = [&](const Tensor& logits) {
    bool all = true;
    for (int64_t b = 0; b < batch; ++b) {
      // A finished row still feeds the batch a token; its argmax is as good as any.
      int64_t id = plain_greedy || done[b] ? argmax_last(logits, b)
                                           : sampler.choose(last_row(logits, b), seen[b]);
      next.as<int64_t>()[b] = id;
      if (!done[b]) {
        r.tokens[b].push_back(id);
        if (!plain_greedy) seen[b].push_back(id);
        if (options.stop_ids.count(id)) r.stop_reasons[b] = StopReason::kStopId;
        if (options.on_token) options.on_token(b, id);
        if (r.stop_reasons[b] == StopReason::kLength && options.stop_requested &&
            options.stop_requested(b))
          r.stop_reasons[b] = StopReason::kRequested;
        done[b] = r.stop_reasons[b] != StopReason::kLength;
      }
      all = all && done[b];
    }
    return all;
  };
  if (take(out.at("logits"))) return r;

  // The caches live on the target's device from here on (contract 2.0): each step reads the
  // last step's caches where they are and leaves its own there; only the token ids, the position
  // and the logits cross to or from the host. A target without a device keeps them in host
  // memory.
  std::shared_ptr<Device> device = decode_.device();
  NamedTensors inputs;
  NamedDeviceTensors device_inputs;
  for (size_t i = 0; i < cache_names_.size(); ++i) {
    const std::string& name = cache_names_[i];
    std::string present = "present_" + name.substr(5);
    Tensor cache = cache_from_prompt(out.at(present), r.cache_capacity, cache_dtypes_[i], name);
    if (device)
      device_inputs[name] = DeviceTensor::upload(device, cache);
    else
      inputs[name] = std::move(cache);
  }
  // Each step writes its token's keys and values into the caches it reads: every present_* is
  // given the memory of its past_*, which the runtime keeps when the program updates that input
  // in place (a scatter its only reader; no copy of the cache per step). Where a step's caches
  // come back in fresh memory instead, the steps alternate between two output maps: a step
  // writes where the step before last wrote, and after two steps none allocates.
  NamedTensors outs[2];
  NamedDeviceTensors device_outs[2];
  bool in_place = true;
  Tensor position(DType::kI64, {1});
  t0 = Clock::now();
  for (int64_t step = 1; step < options.max_new_tokens; ++step) {
    NamedTensors& o = outs[step % 2];
    NamedDeviceTensors& device_o = device_outs[step % 2];
    for (const std::string& name : cache_names_) {
      std::string present = "present_" + name.substr(5);
      if (device)
        device_o[present] = in_place ? device_inputs.at(name) : device_o[present];
      else if (in_place)
        o[present] = inputs.at(name);
    }
    inputs["input_ids"] = next;
    position.as<int64_t>()[0] = len + step - 1;
    inputs["position"] = position;
    decode_.run(inputs, device_inputs, o, device_o);
    if (step == 1) {
      r.first_step_seconds = since(t0);
      t0 = Clock::now();
    } else {
      ++r.decode_steps;
    }
    for (const std::string& name : cache_names_) {
      std::string present = "present_" + name.substr(5);
      if (device) {
        in_place = in_place &&
                   device_o.at(present).buffer().handle == device_inputs.at(name).buffer().handle;
        device_inputs[name] = device_o.at(present);
      } else {
        in_place = in_place && o.at(present).data() == inputs.at(name).data();
        inputs[name] = o.at(present);
      }
    }
    if (take(o.at("logits"))) break;
  }
  r.decode_seconds = since(t0);
  return r;
}

}  // namespace rlx::llm
