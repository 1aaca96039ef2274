// Small rten models built in code with the FlatBuffers object API (generated from the importer's
// schema into namespace rlx::rten::fbt, so it never meets the importer's own accessors), and the
// V1 / V2 file writers the tests use. rten's own writer is not available here; these follow the
// documented layout: V2 = 32-byte header, model buffer, tensor data at a 64-byte aligned offset.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rten_generated.h"

namespace rlx::rten::test {

namespace fbt = rlx::rten::fbt;

struct GraphMaker {
  fbt::GraphT g;

  // A value node; dims are sizes or names ("batch"). No dtype when `dtype` is empty.
  uint32_t value(const std::string& name, const std::vector<std::string>& dims = {},
                 std::optional<fbt::DataType> dtype = std::nullopt, bool has_shape = true);
  uint32_t constant_f32(const std::string& name, std::vector<uint32_t> shape,
                        std::vector<float> data);
  uint32_t constant_i32(const std::string& name, std::vector<uint32_t> shape,
                        std::vector<int32_t> data);
  uint32_t op(const std::string& name, fbt::OperatorType type, std::vector<int32_t> inputs,
              std::vector<int32_t> outputs, fbt::OperatorAttrsUnion attrs = {});
  void inputs(std::vector<uint32_t> v) { g.inputs = std::move(v); }
  void outputs(std::vector<uint32_t> v) { g.outputs = std::move(v); }
  void captures(std::vector<uint32_t> v) { g.captures = std::move(v); }
  std::unique_ptr<fbt::GraphT> take() { return std::make_unique<fbt::GraphT>(std::move(g)); }
};

fbt::ModelT model_of(GraphMaker& main);

// V1: the bare model buffer, constants inline.
std::string write_v1(const fbt::ModelT& model);
// V2: every inline constant of `min_bytes` or more moves to the tensor data section.
std::string write_v2(fbt::ModelT model, size_t min_bytes = 0);
// Any rten file -> object model with every constant's data inline (V2 -> V1 conversion).
fbt::ModelT read_inline(std::string_view file);

// Little-endian header fields of a V2 file, for corrupting them in tests.
void put_u32(std::string& s, size_t at, uint32_t v);
void put_u64(std::string& s, size_t at, uint64_t v);

}  // namespace rlx::rten::test
