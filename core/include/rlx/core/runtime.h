// The public runtime API: compile a graph for a target and run it with named tensors.
//
//   rlx::Session session(target);                  // a Target from the registry
//   rlx::CompiledModel model = session.compile(graph);
//   auto outputs = model.run({{"x", x}});          // name -> Tensor
//
// A CompiledModel specialises itself per input shape (symbolic dims bound from the inputs) and
// caches each specialisation; it is not thread-safe. Compiled from a Model, it checks each run's
// host inputs against the model's input limits (token ids within the vocabulary, ...) before
// anything runs.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "rlx/core/device_tensor.h"
#include "rlx/core/dispatch.h"
#include "rlx/core/graph.h"
#include "rlx/core/input_limits.h"
#include "rlx/core/model.h"
#include "rlx/core/target.h"
#include "rlx/core/tensor.h"

namespace rlx {

using NamedTensors = std::map<std::string, Tensor>;
using NamedDeviceTensors = std::map<std::string, DeviceTensor>;

class CompiledModel {
 public:
  NamedTensors run(const NamedTensors& inputs);
  // Like run(), writing into `outputs`: a tensor already there under an output's name, with the
  // output's dtype and shape and sharing no memory with an input, is overwritten in place; any
  // other output is allocated. A loop that passes the same map allocates nothing after its first
  // run. One exception to "no memory with an input": an output the program makes by scattering
  // rows into an input nothing else reads (a decoder's KV cache) may be given exactly that
  // input's memory, and is then updated there, with no copy of the rest (see
  // docs/plugin-authors.md, "In-place updates"); whether it was shows in the output's data().
  void run(const NamedTensors& inputs, NamedTensors& outputs);
  // With tensors on the target's device (contract 2.0): inputs come from `inputs` (host) or
  // `device_inputs`; every output named in `device_outputs` (an undefined DeviceTensor asks for
  // one) stays on the device, reused in place under the same rules as host outputs, and the
  // others are written to `outputs`. Only host tensors cross to or from the device, so a loop
  // that feeds device outputs back as device inputs keeps them there. Needs a target with a
  // device (device() below).
  void run(const NamedTensors& inputs, const NamedDeviceTensors& device_inputs,
           NamedTensors& outputs, NamedDeviceTensors& device_outputs);
  // The target's device, or nullptr for a target without one.
  std::shared_ptr<Device> device() const;
  const DispatchReport& report() const;
  // The MIR graph after dispatch and passes (symbolic).
  const Graph& mir() const;
  // LIR for the given bindings of the graph's symbols.
  lir::Program lir_for(const Bindings& bindings) const;
  // The MIR graph specialised to the bindings, after passes: what a MIR-level target compiles.
  Graph mir_for(const Bindings& bindings) const;

 private:
  friend class Session;
  struct State;
  std::shared_ptr<State> state_;
};

class Session {
 public:
  explicit Session(std::shared_ptr<Target> target);
  // `limits` are checked against the host inputs of every run (see input_limits.h).
  CompiledModel compile(const Graph& graph, InputLimits limits = {});
  // The model's graph `name` with the input limits its importer recorded.
  CompiledModel compile(const Model& model, const std::string& name = "main");
  Target& target() { return *target_; }

 private:
  std::shared_ptr<Target> target_;
};

}  // namespace rlx
