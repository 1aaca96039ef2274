// rlx.embed's native part: llm::SentenceEncoder (what `rlx embed` runs) compiled once per model
// and target, embedding sentences (the model's tokenizer) or token ids.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <mutex>

#include "arrays.h"
#include "model_handle.h"
#include "rlx/llm/embedding.h"

namespace nb = nanobind;

namespace rlx::python {
namespace {

struct PyEncoder {
  std::shared_ptr<const Model> model;  // the encoder compiled from it
  std::unique_ptr<llm::SentenceEncoder> encoder;
  std::unique_ptr<std::mutex> running = std::make_unique<std::mutex>();  // not thread-safe

  nb::object embed_text(const std::vector<std::string>& sentences) {
    Tensor e;
    {
      nb::gil_scoped_release no_gil;
      std::lock_guard<std::mutex> lock(*running);
      e = encoder->embed(sentences);
    }
    return numpy_from_tensor(e);
  }

  // inputs: input_ids (and optionally attention_mask, token_type_ids), i32 or i64 [batch, seq].
  nb::object embed_ids(nb::handle inputs) {
    NamedTensors given;
    for (auto [key, value] : nb::borrow<nb::dict>(inputs)) {
      std::string name = nb::cast<std::string>(key);
      given.emplace(name, tensor_from_python(value, name));
    }
    NamedTensors out;
    {
      nb::gil_scoped_release no_gil;
      std::lock_guard<std::mutex> lock(*running);
      out = encoder->run(given);
    }
    return numpy_from_tensor(out.at("sentence_embedding"));
  }
};

}  // namespace

void bind_embed(nb::module_& m) {
  nb::class_<PyEncoder>(m, "Encoder",
                        "An encoder model compiled for sentence embeddings (rlx embed).")
      .def("embed_text", &PyEncoder::embed_text, nb::arg("sentences"),
           "f32[n, hidden]: one unit-length row per sentence, tokenized with the model's "
           "tokenizer ([CLS] ... [SEP], cut to the model's row limit, padded and masked).")
      .def("embed_ids", &PyEncoder::embed_ids, nb::arg("inputs"),
           "f32[n, hidden] for {input_ids, attention_mask?, token_type_ids?} [n, seq] (i32 or "
           "i64; attention_mask defaults to ones, token_type_ids to zeros).");
  m.def(
      "encoder",
      [](const PyModel& p, const std::string& target_name) {
        std::shared_ptr<Target> target = executing_target(target_name, p.path);
        auto e = std::make_unique<PyEncoder>();
        e->model = p.model;
        nb::gil_scoped_release no_gil;
        e->encoder = std::make_unique<llm::SentenceEncoder>(*p.model, target);
        return e;
      },
      nb::arg("model"), nb::arg("target") = "cpu",
      "Compiles an encoder model (a bert with a sentence_embedding output) for sentence "
      "embeddings on the target.");
}

}  // namespace rlx::python
