#include "rten_file.h"

#include <fmt/format.h>

#include <cstring>

#include "rlx/core/error.h"
#include "rten_generated.h"

namespace rlx::rten {

namespace {

uint32_t le32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint64_t le64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Runs the verifier over the copied model buffer. rten writes no file identifier (its bytes are
// zero), so none is required.
const fb::Model* verified_model(const std::string& buf, const std::string& where) {
  if (buf.size() < 8)
    throw_user_error(
        fmt::format("{}: the model buffer is {} bytes, too short for a FlatBuffers "
                    "root table",
                    where, buf.size()));
  if (buf.size() >= FLATBUFFERS_MAX_BUFFER_SIZE)
    throw_user_error(
        fmt::format("{}: the model buffer is {} bytes; FlatBuffers buffers are "
                    "limited to 2 GiB (large models need the V2 format, which keeps "
                    "tensor data outside the buffer)",
                    where, buf.size()));
  const auto* data = reinterpret_cast<const uint8_t*>(buf.data());
  // Depth 64 allows about 15 nested If/Loop bodies; 10^6 tables bounds the work a hostile
  // buffer can ask for when many nodes share one subgraph.
  flatbuffers::Verifier verifier(data, buf.size(), 64, 1000000);
  if (!verifier.VerifyBuffer<fb::Model>(nullptr))
    throw_user_error(fmt::format(
        "{}: the model buffer ({} bytes) is not a valid rten FlatBuffers model (a table, vector "
        "or string offset points outside it, a required field is missing, or it nests too "
        "deep); the file is corrupt or not an rten model",
        where, buf.size()));
  return fb::GetModel(data);
}

}  // namespace

RtenFile open_rten(std::string_view bytes, const std::string& name) {
  RtenFile f;
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "RTEN", 4) == 0) {
    if (bytes.size() < kHeaderSize)
      throw_user_error(
          fmt::format("{}: truncated: the file is {} bytes, shorter than the {}-byte "
                      "rten header",
                      name, bytes.size(), kHeaderSize));
    uint32_t version = le32(bytes.data() + 4);
    uint64_t model_offset = le64(bytes.data() + 8);
    uint64_t model_len = le64(bytes.data() + 16);
    uint64_t tensor_offset = le64(bytes.data() + 24);
    uint64_t size = bytes.size();
    if (version != 2)
      throw_user_error(
          fmt::format("{}: rten format version {} is not supported (rlx reads "
                      "version 2 files with this header, and version 1 files, "
                      "which have no header)",
                      name, version));
    if (model_offset < kHeaderSize || model_offset > size)
      throw_user_error(
          fmt::format("{}: the header's model offset {} is outside the file "
                      "(header ends at {}, file size {})",
                      name, model_offset, kHeaderSize, size));
    if (model_len > size - model_offset)
      throw_user_error(
          fmt::format("{}: truncated or inconsistent: the model buffer at offset {} "
                      "is {} bytes long, but the file ends {} bytes after it starts "
                      "(file size {})",
                      name, model_offset, model_len, size - model_offset, size));
    if (tensor_offset < model_offset + model_len || tensor_offset > size)
      throw_user_error(
          fmt::format("{}: the header's tensor data offset {} is inconsistent: it "
                      "must lie between the end of the model buffer ({}) and the "
                      "end of the file ({})",
                      name, tensor_offset, model_offset + model_len, size));
    f.version = 2;
    f.model_bytes.assign(bytes.substr(model_offset, model_len));
    f.tensor_data = bytes.substr(tensor_offset);
    f.tensor_data_offset = tensor_offset;
    f.model = verified_model(f.model_bytes, name);
    return f;
  }
  // No header: a V1 file is the FlatBuffers model alone, with all tensor data inline.
  f.version = 1;
  f.model_bytes.assign(bytes);
  try {
    f.model = verified_model(f.model_bytes, name);
  } catch (const Error& e) {
    throw_user_error(
        fmt::format("{} (the file does not start with the rten V2 magic 'RTEN', so "
                    "it was read as a V1 file: a bare FlatBuffers model)",
                    e.what()));
  }
  return f;
}

}  // namespace rlx::rten
