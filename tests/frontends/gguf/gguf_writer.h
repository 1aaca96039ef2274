// A minimal GGUF writer for tests: builds files byte by byte so each test can produce exactly
// the malformation it checks.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace rlx::gguf::test {

class Bytes {
 public:
  template <typename T>
  Bytes& put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    s_.append(b, sizeof(T));
    return *this;
  }
  Bytes& u8(uint8_t v) { return put(v); }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& i64(int64_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& f32(float v) { return put(v); }
  Bytes& str(const std::string& v) {
    u64(v.size());
    s_ += v;
    return *this;
  }
  Bytes& raw(const std::string& v) {
    s_ += v;
    return *this;
  }
  Bytes& pad_to(size_t align) {
    while (s_.size() % align) s_ += '\0';
    return *this;
  }
  const std::string& str() const { return s_; }
  size_t size() const { return s_.size(); }

 private:
  std::string s_;
};

// Header + n_tensors + n_kv.
inline Bytes header(uint32_t version, int64_t n_tensors, int64_t n_kv) {
  Bytes b;
  b.raw("GGUF").u32(version).i64(n_tensors).i64(n_kv);
  return b;
}

// One tensor info: name, dims (ggml order), type id, offset.
inline void tensor_info(Bytes& b, const std::string& name, const std::vector<int64_t>& ne,
                        uint32_t type, uint64_t offset) {
  b.str(name).u32(static_cast<uint32_t>(ne.size()));
  for (int64_t d : ne) b.i64(d);
  b.u32(type).u64(offset);
}

}  // namespace rlx::gguf::test
