// Reading protobuf messages and turning TensorProtos into rlx Tensors, with every size and
// offset checked against the bytes actually present.
#pragma once
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "rlx/core/tensor.h"

namespace rlx::onnx {

// ONNX TensorProto.DataType -> rlx dtype; nullopt for types rlx has no dtype for.
std::optional<DType> dtype_from_onnx(int t);
int onnx_from_dtype(DType d);
std::string onnx_dtype_name(int t);  // "FLOAT", "UINT32", "FLOAT8E4M3FN", ... or "type 42"

// Parses a ModelProto; throws a user error naming `display_name` when the bytes are not one.
::onnx::ModelProto parse_model(std::string_view bytes, const std::string& display_name);
std::string read_file_bytes(const std::filesystem::path& path);

// `where` names the tensor in messages ("model.onnx: initializer 'w'"). External data is read
// from files relative to `base_dir` and must stay inside it.
Tensor tensor_from_proto(const ::onnx::TensorProto& t, const std::filesystem::path& base_dir,
                         const std::string& where);

}  // namespace rlx::onnx
