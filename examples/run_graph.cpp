// Builds a two-layer MLP through the API, compiles it for the cpu target and runs it.
//
//   rlx_example_run_graph [--plugin-path DIR]
#include <cstdio>
#include <cstring>

#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/runtime.h"
#include "rlx/registry/registry.h"

int main(int argc, char** argv) {
  try {
    rlx::registry::Options options;
    for (int i = 1; i + 1 < argc; ++i)
      if (std::strcmp(argv[i], "--plugin-path") == 0) options.plugin_paths.push_back(argv[i + 1]);
    auto registry = rlx::registry::Registry::discover(options);

    // y = relu(x W1^T + b1) W2^T, with a symbolic batch dim.
    rlx::Graph graph;
    rlx::GraphBuilder b(graph);
    rlx::ValueId x = b.input("x", {rlx::DType::kF32, {rlx::Dim::symbol("batch"), 2}});
    rlx::ValueId w1 =
        b.param("w1", rlx::Tensor::from<float>(rlx::DType::kF32, {3, 2}, {1, 0, 0, 1, 1, -1}));
    rlx::ValueId b1 = b.param("b1", rlx::Tensor::from<float>(rlx::DType::kF32, {3}, {0, 0, -1}));
    rlx::ValueId w2 = b.param("w2", rlx::Tensor::from<float>(rlx::DType::kF32, {1, 3}, {1, 2, 3}));
    rlx::ValueId h = b.op("Relu", {b.op("Linear", {x, w1, b1})});
    b.output(b.op("Linear", {h, w2}));
    graph.values[graph.outputs[0]].name = "y";

    rlx::Session session(registry.target("cpu"));
    rlx::CompiledModel model = session.compile(graph);
    auto out = model.run({{"x", rlx::Tensor::from<float>(rlx::DType::kF32, {2, 2}, {1, 2, 3, 1})}});
    const rlx::Tensor& y = out.at("y");
    // Row 1: h = relu([1, 2, -2]) = [1, 2, 0] -> 5.  Row 2: h = relu([3, 1, 1]) = [3, 1, 1] -> 8.
    std::printf("y = [%g, %g]\n", y.scalar_at(0), y.scalar_at(1));
    return y.scalar_at(0) == 5 && y.scalar_at(1) == 8 ? 0 : 1;
  } catch (const rlx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
