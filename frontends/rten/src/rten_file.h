// The container around an rten model: the V2 header and its sections, or a V1 file (the bare
// FlatBuffers model). Every offset and length is checked against the bytes present, and the model
// buffer passes the FlatBuffers verifier before any accessor touches it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace rlx::rten {

namespace fb {
struct Model;
}

struct RtenFile {
  int version = 0;                  // 1 or 2
  std::string model_bytes;          // the FlatBuffers buffer, copied so that it is suitably aligned
  std::string_view tensor_data;     // V2: the tensor data section (a view into the caller's bytes)
  uint64_t tensor_data_offset = 0;  // where that section starts in the file (for messages)
  const fb::Model* model = nullptr;  // the verified root table inside model_bytes
};

inline constexpr size_t kHeaderSize = 32;

// Reads the header and sections of `bytes` (the whole file) and verifies the model buffer.
// Throws a user error that starts with `display_name` and says which field is wrong and why.
// The result views `bytes`, which must outlive it.
RtenFile open_rten(std::string_view bytes, const std::string& display_name);

}  // namespace rlx::rten
