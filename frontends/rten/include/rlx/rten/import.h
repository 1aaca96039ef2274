// The rten importer as a library: the plugin (frontends/rten/plugin) wraps it, the tests and the
// fuzzer call it directly. A .rten file (V2: header + FlatBuffers model + tensor data; V1: the
// bare FlatBuffers model) -> rlx::Model with one HIR graph, "main", whose inputs and outputs keep
// the model's names.
//
// rten's operators are ONNX's operators (rten models are converted from ONNX), so the importer
// translates the rten graph into an in-memory ONNX graph and hands it to the ONNX importer's
// converter: both formats share one operator table and one set of semantics.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "rlx/core/model.h"
#include "rlx/onnx/import.h"

namespace rlx::rten {

// input_values specialises inputs on known values, dim_values fixes symbolic dims (silero VAD's
// `sequence`: its reflect Pad and strided Conv make sizes rlx cannot keep symbolic).
using ImportOptions = onnx::ImportOptions;

Model import_file(const std::filesystem::path& path, const ImportOptions& options = {});
// `bytes` is the whole file; `display_name` names it in every message.
Model import_bytes(std::string_view bytes, const std::string& display_name,
                   const ImportOptions& options = {});

}  // namespace rlx::rten
