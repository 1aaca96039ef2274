#include "test_support.h"

#include <cstdlib>
#include <map>

#include "rlx/core/ir_text.h"
#include "rlx/registry/registry.h"

namespace rlx::test {

std::shared_ptr<Target> target_named(const std::string& name) {
  // Never destroyed, like the CLI's registry: unloading the plugin at exit while oneTBB worker
  // threads may still run its code would crash after the tests passed.
  static auto* targets = new std::map<std::string, std::shared_ptr<Target>>;
  auto it = targets->find(name);
  if (it != targets->end()) return it->second;
  registry::Options o;
  o.plugin_paths = {RLX_TEST_PLUGIN_DIR};
  o.build_legality = false;
  return (*targets)[name] = registry::Registry::discover(o).target(name);
}

std::shared_ptr<Target> cpu_target() { return target_named("cpu"); }

std::shared_ptr<Target> target_under_test() {
  const char* name = std::getenv("RLX_TEST_TARGET");
  return name && *name ? target_named(name) : cpu_target();
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
