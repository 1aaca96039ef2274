#include "decoder_setup.h"

#include <fmt/format.h>

#include <charconv>
#include <string>

#include "errors.h"

namespace rlx::cli {

std::set<int64_t> model_eos_ids(const Model& model) {
  std::set<int64_t> ids;
  auto it = model.metadata.find("eos_token_ids");
  if (it == model.metadata.end()) return ids;
  const std::string& list = it->second;
  for (size_t start = 0; start < list.size();) {
    size_t end = std::min(list.find(',', start), list.size());
    int64_t id = -1;
    auto [p, ec] = std::from_chars(list.data() + start, list.data() + end, id);
    if (ec != std::errc() || p != list.data() + end || id < 0)
      throw CliError(fmt::format("the model's eos_token_ids metadata '{}' is not a list of token "
                                 "ids",
                                 list),
                     "re-import the model; its importer wrote malformed metadata");
    ids.insert(id);
    start = end + 1;
  }
  return ids;
}

void warn_if_context_unknown(const llm::Decoder& decoder) {
  if (decoder.context() == 0)
    print_warning(
        "the model does not say how many positions it was trained for "
        "(max_position_embeddings), so rlx cannot tell when the text passes them; past its "
        "trained context a model's text degrades without any error");
}

const char* finish_reason(llm::StopReason reason) {
  switch (reason) {
    case llm::StopReason::kStopId:
      return "eos";
    case llm::StopReason::kRequested:
      return "stop_string";
    case llm::StopReason::kLength:
      break;
  }
  return "length";
}

}  // namespace rlx::cli
