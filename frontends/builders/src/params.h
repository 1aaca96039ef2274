// Turns checkpoint tensors into graph params for the model builders. Shapes are checked against
// what the config implies, so a wrong config or a foreign checkpoint fails at build time with a
// message naming the tensor, instead of as an opaque shape error deep inside a graph.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/builder.h"
#include "rlx/frontends/builders.h"

namespace rlx::frontends::detail {

class Params {
 public:
  Params(GraphBuilder& b, const WeightSource& source, std::string what)
      : b_(b), source_(source), what_(std::move(what)) {}

  bool has(const std::string& name) const { return source_.has(name); }
  // The weight as a param in its stored dtype (an embedding table is gathered before casting,
  // so only the rows used are converted).
  ValueId stored(const std::string& name, const std::vector<int64_t>& shape);
  // The weight converted to f32: 16-bit checkpoints are computed in f32 (a Cast node, so the IR
  // says what happens to the stored values).
  ValueId f32(const std::string& name, const std::vector<int64_t>& shape);
  std::optional<ValueId> optional_f32(const std::string& name, const std::vector<int64_t>& shape);

 private:
  GraphBuilder& b_;
  const WeightSource& source_;
  std::string what_;                              // "qwen3 model", for messages
  std::map<std::string, ValueId> stored_, cast_;  // a tied weight becomes one param
};

// Stored dtype to f32 (identity for f32).
ValueId to_f32(GraphBuilder& b, ValueId x);

}  // namespace rlx::frontends::detail
