#include "test_support.h"

#include "rlx/core/ir_text.h"
#include "rlx/registry/registry.h"

namespace rlx::test {

std::shared_ptr<Target> cpu_target() {
  // Never destroyed, like the CLI's registry: unloading the plugin at exit while oneTBB worker
  // threads may still run its code would crash after the tests passed.
  static const std::shared_ptr<Target>* target = [] {
    registry::Options o;
    o.plugin_paths = {RLX_TEST_PLUGIN_DIR};
    o.build_legality = false;
    return new std::shared_ptr<Target>(registry::Registry::discover(o).target("cpu"));
  }();
  return *target;
}

NamedTensors run_text(const std::string& ir, const NamedTensors& inputs, std::shared_ptr<Target> target) {
  Graph g = parse_graph(ir, "test.rlx");
  Session s(std::move(target));
  return s.compile(g).run(inputs);
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.scalar_at(i));
  return v;
}

Tensor f32(std::vector<int64_t> shape, std::vector<float> v) { return Tensor::from<float>(DType::kF32, std::move(shape), v); }

}  // namespace rlx::test
