#include "ml_package.h"

#include <fmt/format.h>

#include <fstream>

#include "model.pb.h"
#include "rlx/core/error.h"
#include "rlx/core/json.h"
#include "rlx/sdk/content_hash.h"

namespace rlx::ane {

namespace fs = std::filesystem;
namespace spec = CoreML::Specification;

namespace {

spec::ArrayFeatureType::ArrayDataType array_type(mil::DataType t) {
  switch (t) {
    case mil::FLOAT32:
      return spec::ArrayFeatureType::FLOAT32;
    case mil::FLOAT16:
      return spec::ArrayFeatureType::FLOAT16;
    case mil::INT32:
      return spec::ArrayFeatureType::INT32;
    default:
      throw_internal_error("ane: no multi-array type for a program input or output");
  }
}

void describe(spec::FeatureDescription* f, const IoValue& io) {
  f->set_name(io.name);
  f->set_shortdescription(io.layout.empty() ? std::string(dtype_name(io.dtype)) : io.layout);
  spec::ArrayFeatureType* a = f->mutable_type()->mutable_multiarraytype();
  for (int64_t d : io.mil.shape) a->add_shape(d);
  a->set_datatype(array_type(io.mil.dtype));
}

void write_file(const fs::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw_user_error("ane: cannot write " + file.string());
}

// A UUID-shaped identifier derived from the package's content, so the same program gives the
// same files.
std::string item_id(const std::string& seed) {
  const std::string h = sdk::content_hash(seed);
  return fmt::format("{}-{}-{}-{}-{}", h.substr(0, 8), h.substr(8, 4), h.substr(12, 4),
                     h.substr(16, 4), h.substr(20, 12));
}

std::string io_json(const IoValue& io) {
  std::string shape;
  for (int64_t d : io.mil.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  return fmt::format(
      R"({{"name": {}, "value": {}, "dtype": "{}", "package_dtype": "{}", "package_shape": [{}], "layout": {}}})",
      json::json_quote(io.name), json::json_quote(io.source), dtype_name(io.dtype),
      cast_name(io.mil.dtype), shape, json::json_quote(io.layout));
}

std::string json_list(const std::vector<std::string>& items) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ",\n    " : "\n    ") + items[i];
  return s + (items.empty() ? "]" : "\n  ]");
}

}  // namespace

std::vector<Artifact> write_package(MilProgram& program, const PackageOptions& options,
                                    const fs::path& dir) {
  spec::Model model;
  model.set_specificationversion(options.deployment.spec_version);
  spec::ModelDescription* d = model.mutable_description();
  for (const IoValue& io : program.inputs) describe(d->add_input(), io);
  for (const IoValue& io : program.outputs) describe(d->add_output(), io);
  for (const IndexCheck& c : program.checks) {
    for (const std::string& name : {c.position, c.value}) {
      IoValue io{name, name, DType::kI32, {mil::INT32, {}}, "an index check"};
      io.mil.shape = {1};
      describe(d->add_output(), io);
    }
  }
  spec::Metadata* m = d->mutable_metadata();
  m->set_shortdescription("compiled by rlx for the ane target (CoreML ML Program)");
  (*m->mutable_userdefined())["com.github.rlx.compute_units"] = options.compute_units;
  (*m->mutable_userdefined())["com.github.rlx.deployment_target"] = options.deployment.name;
  *model.mutable_mlprogram() = program.program;

  const fs::path package = dir / kPackageName;
  const fs::path data = package / "Data" / "com.apple.CoreML";
  fs::create_directories(data / "weights");
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    throw_internal_error("ane: the Model protobuf did not serialise");
  write_file(data / "model.mlmodel", bytes);
  program.blobs.write(data / "weights" / "weight.bin");

  const std::string model_id = item_id("model.mlmodel:" + bytes);
  const std::string weights_id = item_id("weights:" + model_id);
  const std::string manifest = fmt::format(
      R"({{
    "fileFormatVersion": "1.0.0",
    "itemInfoEntries": {{
        "{0}": {{
            "author": "com.apple.CoreML",
            "description": "CoreML Model Specification",
            "name": "model.mlmodel",
            "path": "com.apple.CoreML/model.mlmodel"
        }},
        "{1}": {{
            "author": "com.apple.CoreML",
            "description": "CoreML Model Weights",
            "name": "weights",
            "path": "com.apple.CoreML/weights"
        }}
    }},
    "rootModelIdentifier": "{0}"
}}
)",
      model_id, weights_id);
  write_file(package / "Manifest.json", manifest);

  std::vector<std::string> inputs, outputs, checks;
  for (const IoValue& v : program.inputs) inputs.push_back(io_json(v));
  for (const IoValue& v : program.outputs) outputs.push_back(io_json(v));
  for (const IndexCheck& c : program.checks)
    checks.push_back(fmt::format(
        R"({{"op": "{}", "node": {}, "count": {}, "axis_size": {}, "position": "{}", "value": "{}"}})",
        c.op, json::json_quote(c.node), c.count, c.axis_size, c.position, c.value));
  write_file(dir / "io.json",
             fmt::format("{{\n  \"package\": \"{}\",\n  \"deployment_target\": \"{}\",\n  "
                         "\"compute_units\": \"{}\",\n  \"inputs\": {},\n  \"outputs\": {},\n  "
                         "\"index_checks\": {}\n}}\n",
                         kPackageName, options.deployment.name, options.compute_units,
                         json_list(inputs), json_list(outputs), json_list(checks)));
  const fs::path root(kPackageName);
  return {{(root / "Manifest.json").string(), "mlpackage-manifest"},
          {(root / "Data/com.apple.CoreML/model.mlmodel").string(), "mlmodel"},
          {(root / "Data/com.apple.CoreML/weights/weight.bin").string(), "weights"},
          {"io.json", "io-layout"}};
}

}  // namespace rlx::ane
