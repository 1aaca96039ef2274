// rten graph -> ONNX graph. rten's operators are ONNX operators with their attributes stored in
// FlatBuffers tables, and its graphs are ONNX graphs with numbered nodes; the translation gives
// every value a unique ONNX name, turns constants into initializers, operators into NodeProtos
// (opset 18 forms), subgraph captures into outer-scope references by name, and bridges rten's
// integer world (no bool or int64 tensors: comparisons and shapes are int32) with Casts.
#pragma once
#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "rten_file.h"
#include "rten_generated.h"

namespace rlx::rten {

inline constexpr int kOnnxOpset = 18;

// One rten operator as ONNX sees it (translate_ops.cpp).
struct OpPlan {
  std::string op_type;
  std::vector<::onnx::AttributeProto> attrs;
  std::vector<std::pair<std::string, const fb::Graph*>> subgraphs;  // graph attributes
  // Reduce* axes held as an attribute by rten become input 1 (opset 18).
  bool axes_to_input = false;
  std::vector<int64_t> axes;
  // Inputs rten passes as int32 that ONNX takes as bool (Where's condition, If's, Not/And...).
  std::vector<int> bool_inputs;
  // Outputs ONNX produces as bool or int64 that rten produces as int32.
  std::vector<int> int32_outputs;
};

// `where` names the node in messages ("node 'Conv_3' (Conv)").
OpPlan plan_op(const fb::OperatorNode& op, const std::string& where);

// The element type of a graph input whose ValueNode has no dtype (files from rten before value
// dtypes were stored): int32 where the model uses it as an index or combines it with int32
// constants, float32 otherwise. `why` receives the evidence.
struct InferredType {
  int onnx_type;
  std::string why;
};
std::map<std::string, InferredType> infer_input_types(const fb::Model& model);

class Translator {
 public:
  Translator(const RtenFile& file, std::string display_name);
  // The whole model; notes receives what the translation decided (inferred input types).
  ::onnx::ModelProto run(std::map<std::string, std::string>* notes);

 private:
  struct Scope {
    const Scope* parent = nullptr;
    std::map<std::string, std::string> names;  // rten node name -> ONNX value name
  };

  void graph(const fb::Graph& g, const Scope* parent, const std::string& where,
             ::onnx::GraphProto* out, bool main);
  void constant(const fb::ConstantNode& c, const std::string& rten_name,
                const std::string& onnx_name, ::onnx::TensorProto* out) const;
  void operator_node(const fb::Graph& g, uint32_t index, const std::vector<std::string>& names,
                     const std::map<uint32_t, std::string>& unresolved, const Scope& scope,
                     ::onnx::GraphProto* out);
  void value_info(const fb::ValueNode* v, const std::string& rten_name,
                  const std::string& onnx_name, ::onnx::ValueInfoProto* out,
                  const std::string& where) const;
  std::string fresh(const std::string& base);

  const RtenFile& file_;
  std::string name_;
  std::map<std::string, int> used_;  // ONNX value names handed out, with a suffix counter
  std::map<std::string, InferredType> inferred_;
  int depth_ = 0;
};

}  // namespace rlx::rten
