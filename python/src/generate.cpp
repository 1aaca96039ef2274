// rlx.generate's native part: llm::Decoder (what `rlx generate` runs) on a worker thread, its
// tokens handed to Python one at a time. The worker computes at most one token ahead of the
// reader and never touches Python; the reader waits with the GIL released. close() asks the
// decoder to stop after its current token and joins the worker, freeing the compiled graphs and
// the KV cache at once rather than when the garbage collector gets to them.
#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "decoder_setup.h"  // the CLI's: finish_reason
#include "compiled.h"  // apply_precision_option
#include "errors.h"    // the CLI's: UsageError
#include "model_handle.h"
#include "rlx/core/dtype.h"
#include "rlx/core/error.h"
#include "rlx/llm/decoding.h"
#include "rlx/llm/text_stream.h"
#include "sampling_flags.h"  // the CLI's: sampling_options (one check of the sampling options)

namespace nb = nanobind;

namespace rlx::python {
namespace {

std::atomic<int> live_decoders{0};  // for the tests: a closed generation holds none

// The model's tokenizer, or a user error saying how to do without one.
Tokenizer tokenizer_of(const Model& model) {
  if (model.tokenizer) return Tokenizer(*model.tokenizer);
  std::string why = "it has none (no tokenizer.json or vocab.txt beside its weights)";
  if (auto it = model.metadata.find(kTokenizerProblemKey); it != model.metadata.end())
    why = "its tokenizer is not supported: " + it->second;
  throw_user_error(
      fmt::format("a text prompt and text output need the {} model's tokenizer, and "
                  "{}; give the prompt as token ids and pass tokens=True",
                  model.architecture, why));
}

struct GenerateArgs {
  std::optional<std::string> prompt_text;
  std::vector<int64_t> prompt_ids;
  int64_t max_new_tokens = 32;
  cli::SamplingFlags sampling;
  std::vector<std::string> stop;
  bool ignore_eos = false, tokens = false;
  std::optional<std::string> precision, kv_cache;
};

// The model as `a` asks to generate with it: the shared one, or a copy of its graphs (the weights
// stay shared) narrowed by precision= (every graph, as `rlx generate --precision` does) and with
// its decode graph's KV cache kept in kv_cache=.
std::shared_ptr<const Model> model_to_generate(const PyModel& p, const GenerateArgs& a) {
  if ((!a.precision || *a.precision == "f32") && !a.kv_cache) return p.model;
  auto m = std::make_shared<Model>(*p.model);
  for (auto& [name, g] : m->graphs) apply_precision_option(g, name, a.precision);
  if (a.kv_cache) {
    auto decode = m->graphs.find("decode");
    if (decode == m->graphs.end())
      throw_user_error(fmt::format(
          "kv_cache='{}': the {} model has no decode graph with a KV cache; leave kv_cache out",
          *a.kv_cache, p.model->architecture));
    apply_kv_cache_option(decode->second, "decode", *a.kv_cache);
  }
  return m;
}

class Generation {
 public:
  Generation(const PyModel& p, std::shared_ptr<Target> target, GenerateArgs a)
      : model_(model_to_generate(p, a)), tokens_only_(a.tokens) {
    if (a.max_new_tokens < 0)
      throw_user_error(fmt::format("max_new_tokens={} is negative", a.max_new_tokens));
    if (!a.stop.empty() && tokens_only_)
      throw_user_error(
          "stop strings look for text, and tokens=True gives token ids: leave out "
          "tokens=True (the model needs a tokenizer) or stop");
    for (const std::string& s : a.stop)
      if (s.empty()) throw_user_error("a stop string is empty: it would match before any text");
    options_.sampling = cli::sampling_options(a.sampling);
    options_.max_new_tokens = a.max_new_tokens;
    if (!tokens_only_ || a.prompt_text) tokenizer_.emplace(tokenizer_of(*model_));
    prompt_ = a.prompt_text ? tokenizer_->encode(*a.prompt_text, /*add_special=*/true)
                            : std::move(a.prompt_ids);
    if (prompt_.empty()) throw_user_error("the prompt gives no tokens: give a non-empty prompt");
    if (!a.ignore_eos) options_.stop_ids = llm::end_of_text_ids(*model_);
    {
      nb::gil_scoped_release no_gil;
      decoder_ = std::make_unique<llm::Decoder>(*model_, std::move(target));
    }
    ++live_decoders;
    const auto n = static_cast<int64_t>(prompt_.size());
    if (const int64_t context = decoder_->context();
        context > 0 && n + a.max_new_tokens > context) {
      close();
      throw_user_error(fmt::format(
          "max_new_tokens={}: the prompt's {} tokens and {} new ones "
          "exceed the model's context of {} positions "
          "(max_position_embeddings); give {} or less",
          a.max_new_tokens, n, a.max_new_tokens, context, std::max<int64_t>(context - n, 0)));
    }
    if (!tokens_only_) text_.emplace(*tokenizer_, a.stop);
    options_.on_token = [this](int64_t, int64_t token) { hand_over(token); };
    options_.stop_requested = [this](int64_t) {
      std::lock_guard<std::mutex> lock(mutex_);
      return cancelled_ || (text_ && text_->stopped());
    };
    worker_ = std::thread([this] { work(); });
  }
  ~Generation() { close(); }

  // The next piece of text (or token id with tokens=True); None once generation has ended.
  nb::object next() {
    for (;;) {
      std::optional<Item> item;
      {
        nb::gil_scoped_release no_gil;
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return !queue_.empty() || finished_; });
        if (!queue_.empty()) {
          item = std::move(queue_.front());
          queue_.pop_front();
        }
      }
      ready_.notify_all();
      if (!item) break;
      if (tokens_only_) return nb::int_(item->token);
      if (!item->piece.empty()) return nb::str(item->piece.data(), item->piece.size());
    }
    close();
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return nb::none();
  }

  // Stops the decoder after its current token and frees it.
  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      cancelled_ = true;
    }
    ready_.notify_all();
    if (worker_.joinable()) {
      nb::gil_scoped_release no_gil;
      worker_.join();
    }
    if (decoder_) {
      decoder_.reset();
      --live_decoders;
    }
  }

  // {"prompt_ids", "tokens", "finish_reason", "text"?, "stop_string"?} of what was generated.
  nb::dict result() const {
    nb::dict d;
    std::lock_guard<std::mutex> lock(mutex_);
    d["prompt_ids"] = nb::cast(prompt_);
    d["tokens"] = nb::cast(generated_);
    d["finish_reason"] = finish_reason_ ? nb::object(nb::str(finish_reason_)) : nb::none();
    if (text_) {
      d["text"] = nb::str(text_->text().data(), text_->text().size());
      if (text_->stopped())
        d["stop_string"] = nb::cast(text_->stop_strings().at(*text_->stopped()));
    }
    return d;
  }

  static int live() { return live_decoders.load(); }

 private:
  struct Item {
    int64_t token = 0;
    std::string piece;
  };

  // On the worker, as the decoder chooses a token: queue it, then wait while the reader is more
  // than one token behind (or until close()).
  void hand_over(int64_t token) {
    std::unique_lock<std::mutex> lock(mutex_);  // result() may read text_ meanwhile
    std::string piece = text_ ? text_->add(token) : std::string();
    generated_.push_back(token);
    queue_.push_back({token, std::move(piece)});
    ready_.notify_all();
    ready_.wait(lock, [&] { return queue_.size() < 2 || cancelled_; });
  }

  void work() {
    std::exception_ptr error;
    const char* reason = nullptr;
    std::string rest;
    try {
      const auto n = static_cast<int64_t>(prompt_.size());
      llm::DecodeResult r =
          decoder_->run(Tensor::from<int64_t>(DType::kI64, {1, n}, prompt_), options_);
      reason = cli::finish_reason(r.stop_reasons.at(0));
      std::lock_guard<std::mutex> lock(mutex_);
      if (text_) rest = text_->finish();
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!rest.empty()) queue_.push_back({-1, std::move(rest)});
    error_ = error;
    finish_reason_ = reason;
    finished_ = true;
    ready_.notify_all();
  }

  std::shared_ptr<const Model> model_;
  bool tokens_only_;
  std::optional<Tokenizer> tokenizer_;  // before text_, which refers to it
  std::optional<llm::TextStream> text_;
  std::vector<int64_t> prompt_;
  llm::DecodeOptions options_;
  std::unique_ptr<llm::Decoder> decoder_;
  std::thread worker_;

  mutable std::mutex mutex_;  // guards what follows, shared by the worker and the reader
  std::condition_variable ready_;
  std::deque<Item> queue_;
  std::vector<int64_t> generated_;
  bool cancelled_ = false, finished_ = false;
  const char* finish_reason_ = nullptr;
  std::exception_ptr error_;
};

}  // namespace

void bind_generate(nb::module_& m) {
  nb::class_<Generation>(m, "Generation",
                         "A decoder generating on a worker thread (rlx.generate wraps it).")
      .def("next", &Generation::next,
           "The next text piece (a token id with tokens=True), None at the end. Waits with the "
           "GIL released.")
      .def("close", &Generation::close,
           "Stops generating after the current token and frees the decoder and its KV cache.")
      .def("result", &Generation::result,
           "{prompt_ids, tokens, finish_reason, text?, stop_string?} so far.");
  m.def(
      "generate",
      [](const PyModel& p, const std::string& target_name, std::optional<std::string> prompt_text,
         std::vector<int64_t> prompt_ids, int64_t max_new_tokens, std::optional<double> temperature,
         std::optional<int64_t> top_k, std::optional<double> top_p, std::optional<int64_t> seed,
         std::optional<double> repetition_penalty, std::vector<std::string> stop, bool ignore_eos,
         bool tokens, std::optional<std::string> precision, std::optional<std::string> kv_cache) {
        GenerateArgs a;
        a.prompt_text = std::move(prompt_text);
        a.prompt_ids = std::move(prompt_ids);
        a.max_new_tokens = max_new_tokens;
        a.sampling = {temperature, top_p, repetition_penalty, top_k, seed};
        a.stop = std::move(stop);
        a.ignore_eos = ignore_eos;
        a.tokens = tokens;
        a.precision = std::move(precision);
        a.kv_cache = std::move(kv_cache);
        return std::make_unique<Generation>(p, executing_target(target_name, p.path), std::move(a));
      },
      nb::arg("model"), nb::arg("target"), nb::arg("prompt_text").none(), nb::arg("prompt_ids"),
      nb::arg("max_new_tokens"), nb::arg("temperature").none(), nb::arg("top_k").none(),
      nb::arg("top_p").none(), nb::arg("seed").none(), nb::arg("repetition_penalty").none(),
      nb::arg("stop"), nb::arg("ignore_eos"), nb::arg("tokens"), nb::arg("precision").none(),
      nb::arg("kv_cache").none(),
      "Starts generating (rlx.generate documents the arguments).");
  m.def("_live_generations", &Generation::live,
        "How many generations hold a decoder (for the tests of close()).");
}

}  // namespace rlx::python
