// read_gguf: a private (copy-on-write) mapping of the file, shared by every tensor viewing it.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gguf_reader.h"
#include "rlx/core/error.h"

namespace rlx::gguf {

namespace {

struct Mapping {
  void* data = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (data) ::munmap(data, size);
  }
};

}  // namespace

GgufFile read_gguf(const std::filesystem::path& path, ParseOptions options) {
  const std::string name = path.string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_user_error(fmt::format("{}: cannot open: {}", name, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_user_error(fmt::format("{}: cannot read: not a regular file", name));
  }
  auto m = std::make_shared<Mapping>();
  m->size = static_cast<size_t>(st.st_size);
  if (m->size > 0) {
    // Copy-on-write: tensors viewing the mapping may be written like any tensor, privately.
    void* p = ::mmap(nullptr, m->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      std::string why = std::strerror(errno);
      ::close(fd);
      throw_user_error(fmt::format("{}: cannot map: {}", name, why));
    }
    m->data = p;
  }
  ::close(fd);
  std::span<const uint8_t> bytes(static_cast<const uint8_t*>(m->data), m->size);
  return parse_gguf(bytes, name, options, std::move(m));
}

}  // namespace rlx::gguf
