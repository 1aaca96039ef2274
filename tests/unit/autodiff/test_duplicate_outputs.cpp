// A graph that returns one value twice (autodiff gives add's two operands one gradient value):
// both outputs must hold it, and a run that reuses its output map must not write into memory it
// has just freed (it did, found by test_vjp_rules.cpp under valgrind).
#include <gtest/gtest.h>

#include "rlx/core/builder.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx {
namespace {

TEST(Runtime, AGraphReturningOneValueTwiceFillsBoth) {
  Graph g;
  GraphBuilder b(g);
  ValueId x = b.input("x", {DType::kF32, {4}});
  ValueId y = b.mul(x, b.full_like(x, 3.0));
  g.values[y].name = "y";
  b.output(y);
  b.output(y);
  Session s(test::cpu_target());
  CompiledModel m = s.compile(g);
  NamedTensors out;
  for (int run = 0; run < 3; ++run) {
    m.run({{"x", test::f32({4}, {1, 2, 3, 4})}}, out);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(test::values(out.at("y")), (std::vector<double>{3, 6, 9, 12}));
  }
}

}  // namespace
}  // namespace rlx
