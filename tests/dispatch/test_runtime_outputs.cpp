// CompiledModel::run(inputs, outputs): the steady-state path writes into the caller's tensors
// when it safely can, and allocates otherwise. Values are checked against hand-computed ones.
#include <gtest/gtest.h>

#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx {
namespace {

// y = x + x, z = x * x: two outputs, so reuse is decided per output.
CompiledModel compile_two_outputs() {
  Session s(test::cpu_target());
  return s.compile(parse_graph(R"(graph @g(%x: f32[2,3]) {
  %y = Add(%x, %x) : f32[2,3]
  %z = Mul(%x, %x) : f32[2,3]
  return %y, %z
}
)"));
}

const std::vector<float> kX = {1, 2, 3, -4, 5, 0.5f};

TEST(RuntimeOutputs, MatchingOutputsAreWrittenInPlace) {
  CompiledModel m = compile_two_outputs();
  NamedTensors in{{"x", test::f32({2, 3}, kX)}};
  NamedTensors out;
  m.run(in, out);
  ASSERT_EQ(out.size(), 2u);
  const void* y_mem = out.at("y").data();
  const void* z_mem = out.at("z").data();
  in.at("x").as<float>()[0] = 10;
  m.run(in, out);
  EXPECT_EQ(out.at("y").data(), y_mem);  // no new allocation
  EXPECT_EQ(out.at("z").data(), z_mem);
  EXPECT_EQ(test::values(out.at("y")), (std::vector<double>{20, 4, 6, -8, 10, 1}));
  EXPECT_EQ(test::values(out.at("z")), (std::vector<double>{100, 4, 9, 16, 25, 0.25}));
}

TEST(RuntimeOutputs, AnOutputSharingAnInputsMemoryIsReallocated) {
  CompiledModel m = compile_two_outputs();
  Tensor x = test::f32({2, 3}, kX);
  NamedTensors out{{"y", x}};  // y would overwrite x while the kernels read it
  m.run({{"x", x}}, out);
  EXPECT_NE(out.at("y").data(), x.data());
  EXPECT_EQ(test::values(x), (std::vector<double>{1, 2, 3, -4, 5, 0.5}));  // input untouched
  EXPECT_EQ(test::values(out.at("y")), (std::vector<double>{2, 4, 6, -8, 10, 1}));
}

TEST(RuntimeOutputs, WrongShapeDtypeOrSharedOutputsAreReplaced) {
  CompiledModel m = compile_two_outputs();
  Tensor shared = test::f32({2, 3}, std::vector<float>(6, 7));
  NamedTensors out{{"y", shared},
                   {"z", shared},  // two outputs in one buffer
                   {"other", test::f32({1}, {42})}};
  m.run({{"x", test::f32({2, 3}, kX)}}, out);
  EXPECT_NE(out.at("y").data(), out.at("z").data());
  EXPECT_EQ(test::values(out.at("y")), (std::vector<double>{2, 4, 6, -8, 10, 1}));
  EXPECT_EQ(test::values(out.at("z")), (std::vector<double>{1, 4, 9, 16, 25, 0.25}));
  EXPECT_EQ(test::values(out.at("other")), (std::vector<double>{42}));  // not an output: kept

  NamedTensors wrong{{"y", test::f32({3, 2}, std::vector<float>(6))},
                     {"z", Tensor(DType::kF64, {2, 3})}};
  const void* y_mem = wrong.at("y").data();
  m.run({{"x", test::f32({2, 3}, kX)}}, wrong);
  EXPECT_NE(wrong.at("y").data(), y_mem);
  EXPECT_EQ(wrong.at("y").shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(wrong.at("z").dtype(), DType::kF32);
  EXPECT_EQ(test::values(wrong.at("z")), (std::vector<double>{1, 4, 9, 16, 25, 0.25}));
}

// Contract 2.0 on a host-memory target: cpu's device is host memory, so device tensors reach the
// kernels as host pointers; an output kept on the device is written in place on the next run.
TEST(RuntimeOutputs, DeviceTensorsOfAHostTargetAreWrittenInPlace) {
  CompiledModel m = compile_two_outputs();
  std::shared_ptr<Device> device = m.device();
  ASSERT_TRUE(device);
  NamedDeviceTensors in{{"x", DeviceTensor::upload(device, test::f32({2, 3}, kX))}};
  ASSERT_NE(device->host_address(in.at("x").buffer()), nullptr);
  NamedTensors host_out;
  NamedDeviceTensors dev_out{{"y", DeviceTensor()}};
  m.run({}, in, host_out, dev_out);
  const void* y_mem = dev_out.at("y").buffer().handle;
  EXPECT_EQ(test::values(dev_out.at("y").download()), (std::vector<double>{2, 4, 6, -8, 10, 1}));
  EXPECT_EQ(test::values(host_out.at("z")), (std::vector<double>{1, 4, 9, 16, 25, 0.25}));
  m.run({}, in, host_out, dev_out);
  EXPECT_EQ(dev_out.at("y").buffer().handle, y_mem);  // no new allocation
  // The same input on the host and on the device is ambiguous.
  NamedTensors both{{"x", test::f32({2, 3}, kX)}};
  EXPECT_THROW(m.run(both, in, host_out, dev_out), Error);
}

// A cache updated in place (the runtime's in_place.h): the output keeps the input's memory, on
// the host and on cpu's device, step after step.
TEST(RuntimeOutputs, AScatteredCacheIsUpdatedInPlace) {
  test::check_in_place_cache_update(test::cpu_target());
}

// The same step when something else reads the cache too: writing in place would change what that
// reader sees, so the output gets memory of its own and the input is left as it was.
TEST(RuntimeOutputs, ACacheWithAnotherReaderIsNotUpdatedInPlace) {
  Session s(test::cpu_target());
  CompiledModel m =
      s.compile(parse_graph(R"(graph @t(%past: f32[4], %position: i64[1], %k: f32[1]) {
  %present = scatter(%past, %position, %k) {axis = 0, reduce = "none"} : f32[4]
  %old = reduce_sum(%past) {axes = [0]} : f32[]
  return %present, %old
}
)"));
  Tensor cache = test::f32({4}, {1, 2, 3, 4});
  NamedTensors out{{"present", cache}};
  m.run({{"past", cache},
         {"position", Tensor::from<int64_t>(DType::kI64, {1}, {2})},
         {"k", test::f32({1}, {10})}},
        out);
  EXPECT_NE(out.at("present").data(), cache.data());
  EXPECT_EQ(test::values(out.at("present")), (std::vector<double>{1, 2, 10, 4}));
  EXPECT_EQ(test::values(out.at("old")), (std::vector<double>{10}));
  EXPECT_EQ(test::values(cache), (std::vector<double>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace rlx
