// Which weights the builders read, and the refusal of a checkpoint whose other weights would be
// silently dropped: a config that says fewer layers (or no bias, no q/k norm...) than the
// checkpoint holds builds a different model than the one that was trained.
#include <fmt/format.h>

#include <regex>

#include "builders_internal.h"
#include "rlx/core/error.h"

namespace rlx::frontends::detail {
namespace {

// Tensors checkpoints carry for uses other than this model's forward pass: recomputed rotary
// and position buffers, and the heads of other tasks that sentence embeddings do not use
// (transformers' BertModel drops the same ones when loading a BertForMaskedLM checkpoint).
bool known_unused(const std::string& name) {
  static const std::regex kOptional(
      R"((.*\.)?rotary_emb\.inv_freq|(bert\.)?embeddings\.position_ids|(bert\.)?pooler\..*|cls\..*)");
  return std::regex_match(name, kOptional);
}

// The layer index of "model.layers.7.mlp..." / "encoder.layer.7...", or -1.
int64_t layer_of(const std::string& name) {
  static const std::regex kLayer(R"(.*\.layers?\.(\d+)\..*)");
  std::smatch m;
  if (!std::regex_match(name, m, kLayer)) return -1;
  return std::stoll(m[1].str());
}

}  // namespace

Weight UsedWeights::get(const std::string& name) const {
  used_.insert(name);
  return source_.get(name);
}

void UsedWeights::check_all_used(const TransformerConfig& c,
                                 const std::function<bool(const std::string&)>& elsewhere) const {
  std::vector<std::string> unused;
  int64_t deepest = -1;
  for (const std::string& name : source_.names())
    if (!used_.count(name) && !known_unused(name) && !(elsewhere && elsewhere(name))) {
      unused.push_back(name);
      deepest = std::max(deepest, layer_of(name));
    }
  if (unused.empty()) return;
  std::string listed;
  for (size_t i = 0; i < unused.size() && i < 5; ++i)
    listed += (listed.empty() ? "" : ", ") + unused[i];
  if (unused.size() > 5) listed += fmt::format(" and {} more", unused.size() - 5);
  std::string why = deepest >= c.layers
                        ? fmt::format("the checkpoint has layer {} but num_hidden_layers is {}",
                                      deepest, c.layers)
                        : "the config does not describe the model these weights belong to";
  throw_user_error(
      fmt::format("{} ({}): {} weight{} of the checkpoint would never be read ({}): "
                  "{}; fix the config to match the checkpoint",
                  c.arch, c.source, unused.size(), unused.size() == 1 ? "" : "s", why, listed));
}

}  // namespace rlx::frontends::detail
