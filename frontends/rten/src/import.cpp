// File -> checked sections -> ONNX graph -> the ONNX importer's converter -> rlx::Model.
#include "rlx/rten/import.h"

#include <fmt/format.h>

#include <fstream>

#include "rlx/core/error.h"
#include "rten_file.h"
#include "translate.h"

namespace rlx::rten {

namespace fs = std::filesystem;

Model import_bytes(std::string_view bytes, const std::string& display_name,
                   const ImportOptions& options) {
  RtenFile file = open_rten(bytes, display_name);
  std::map<std::string, std::string> notes;
  ::onnx::ModelProto proto = Translator(file, display_name).run(&notes);
  // External data never occurs in the translated graph; the folder is only a formality.
  Model m = onnx::import_model(proto, display_name, fs::path(), options);
  m.architecture = "rten";
  std::map<std::string, std::string> meta = std::move(notes);
  meta["rten.format_version"] = std::to_string(file.version);
  meta["rten.schema_version"] = std::to_string(file.model->schema_version());
  if (const fb::Metadata* md = file.model->metadata()) {
    auto put = [&](const char* key, const flatbuffers::String* s) {
      if (s && s->size()) meta[std::string("rten.") + key] = s->str();
    };
    put("onnx_hash", md->onnx_hash());
    put("description", md->description());
    put("license", md->license());
    put("commit", md->commit());
    put("code_repository", md->code_repository());
    put("model_repository", md->model_repository());
    put("run_id", md->run_id());
    put("run_url", md->run_url());
  }
  if (auto fixed = m.metadata.find(kFixedDimsKey); fixed != m.metadata.end())
    meta[kFixedDimsKey] = fixed->second;
  m.metadata = std::move(meta);
  return m;
}

Model import_file(const fs::path& path, const ImportOptions& options) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw_user_error(fmt::format("{}: not a file", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_user_error(fmt::format("{}: cannot be opened for reading", path.string()));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw_user_error(fmt::format("{}: reading failed", path.string()));
  return import_bytes(bytes, path.string(), options);
}

}  // namespace rlx::rten
