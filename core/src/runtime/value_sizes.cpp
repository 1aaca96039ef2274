#include "value_sizes.h"

#include <fmt/format.h>
#include <unistd.h>

#include <optional>

#include "rlx/core/error.h"

namespace rlx {
namespace {

// Physical memory: a value larger than that cannot be held by any target on this machine.
uint64_t memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return uint64_t{1} << 62;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

std::optional<uint64_t> bytes_of(const TensorType& t) {
  uint64_t n = dtype_size(t.dtype);
  for (const Dim& d : t.shape) {
    if (!d.is_static() || d.value < 0) return 0;  // not this check's to judge
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d.value), &n)) return std::nullopt;
  }
  return n;
}

std::string human(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) v /= 1024, ++u;
  return u == 0 ? fmt::format("{} bytes", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace

void check_value_sizes(const Graph& g, const Bindings& bindings) {
  const uint64_t limit = memory_bytes();
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].outputs) {
      const TensorType& t = g.type(v);
      std::optional<uint64_t> bytes = bytes_of(t);
      if (bytes && *bytes <= limit) continue;
      std::string with;
      for (const auto& [sym, size] : bindings)
        with += fmt::format("{}{} = {}", with.empty() ? " (with " : ", ", sym, size);
      if (!with.empty()) with += ")";
      throw_user_error(fmt::format(
          "{} would produce {}{}: {}, more than this machine's {} of memory; give smaller "
          "input shapes or dim sizes, or a model that asks for less",
          g.describe_node(static_cast<int32_t>(i)), t.str(), with,
          bytes ? human(*bytes) : std::string("more than 2^64 bytes"), human(limit)));
    }
}

}  // namespace rlx
