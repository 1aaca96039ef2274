#include "decoder_setup.h"

#include <fmt/format.h>

#include <string>

#include "errors.h"

namespace rlx::cli {

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
