// The text form of an optimizer configuration, as `rlx train --optimizer` takes it.
#include <fmt/format.h>

#include <cstdlib>

#include "rlx/core/error.h"
#include "rlx/core/optimizers.h"

namespace rlx {

namespace {

constexpr const char* kKeys =
    "lr, momentum, nesterov, weight_decay, beta1, beta2, eps, clip, schedule (constant|cosine), "
    "warmup, total, min_lr";

double number(const std::string& text, const std::string& key, const std::string& all) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0')
    throw_user_error(fmt::format("optimizer '{}': {}={} is not a number", all, key, text));
  return v;
}

}  // namespace

OptimizerConfig parse_optimizer(const std::string& text) {
  OptimizerConfig c;
  size_t colon = text.find(':');
  std::string kind = text.substr(0, colon);
  if (kind == "sgd") c.kind = OptimizerConfig::Kind::kSgd;
  else if (kind == "adam") c.kind = OptimizerConfig::Kind::kAdam, c.lr = 1e-3;
  else if (kind == "adamw") c.kind = OptimizerConfig::Kind::kAdamW, c.lr = 1e-3, c.weight_decay = 0.01;
  else
    throw_user_error(fmt::format("optimizer '{}': unknown kind '{}'; use sgd, adam or adamw "
                                 "(e.g. sgd:lr=0.02,momentum=0.9)", text, kind));
  std::string rest = colon == std::string::npos ? "" : text.substr(colon + 1);
  size_t at = 0;
  while (at < rest.size()) {
    size_t comma = rest.find(',', at);
    std::string item = rest.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? rest.size() : comma + 1;
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      throw_user_error(fmt::format("optimizer '{}': '{}' is not key=value (keys: {})", text, item, kKeys));
    std::string key = item.substr(0, eq), val = item.substr(eq + 1);
    if (key == "lr") c.lr = number(val, key, text);
    else if (key == "momentum") c.momentum = number(val, key, text);
    else if (key == "nesterov") c.nesterov = val == "1" || val == "true";
    else if (key == "weight_decay" || key == "wd") c.weight_decay = number(val, key, text);
    else if (key == "beta1") c.beta1 = number(val, key, text);
    else if (key == "beta2") c.beta2 = number(val, key, text);
    else if (key == "eps") c.eps = number(val, key, text);
    else if (key == "clip") c.clip_norm = number(val, key, text);
    else if (key == "warmup") c.schedule.warmup_steps = static_cast<int64_t>(number(val, key, text));
    else if (key == "total") c.schedule.total_steps = static_cast<int64_t>(number(val, key, text));
    else if (key == "min_lr") c.schedule.min_lr = number(val, key, text);
    else if (key == "schedule") {
      if (val == "constant") c.schedule.kind = LrSchedule::Kind::kConstant;
      else if (val == "cosine") c.schedule.kind = LrSchedule::Kind::kCosine;
      else throw_user_error(fmt::format("optimizer '{}': schedule must be constant or cosine, got '{}'", text, val));
    } else {
      throw_user_error(fmt::format("optimizer '{}': unknown key '{}' (keys: {})", text, key, kKeys));
    }
  }
  if (c.nesterov && c.momentum == 0)
    throw_user_error(fmt::format("optimizer '{}': nesterov needs a momentum", text));
  if (c.kind != OptimizerConfig::Kind::kSgd && (c.momentum != 0 || c.nesterov))
    throw_user_error(fmt::format("optimizer '{}': momentum and nesterov are sgd's; adam uses beta1", text));
  return c;
}

std::string optimizer_text(const OptimizerConfig& c) {
  std::string s;
  switch (c.kind) {
    case OptimizerConfig::Kind::kSgd:
      s = fmt::format("sgd:lr={}", c.lr);
      if (c.momentum != 0) s += fmt::format(",momentum={}", c.momentum);
      if (c.nesterov) s += ",nesterov=1";
      break;
    case OptimizerConfig::Kind::kAdam: s = fmt::format("adam:lr={},beta1={},beta2={},eps={}", c.lr, c.beta1, c.beta2, c.eps); break;
    case OptimizerConfig::Kind::kAdamW: s = fmt::format("adamw:lr={},beta1={},beta2={},eps={}", c.lr, c.beta1, c.beta2, c.eps); break;
  }
  if (c.weight_decay != 0) s += fmt::format(",weight_decay={}", c.weight_decay);
  if (c.clip_norm > 0) s += fmt::format(",clip={}", c.clip_norm);
  if (c.schedule.kind == LrSchedule::Kind::kCosine)
    s += fmt::format(",schedule=cosine,total={},min_lr={}", c.schedule.total_steps, c.schedule.min_lr);
  if (c.schedule.warmup_steps > 0) s += fmt::format(",warmup={}", c.schedule.warmup_steps);
  return s;
}

}  // namespace rlx
