// Probe verdicts on disk, so each plugin file is probed once rather than at every command. A
// verdict is keyed by what it depends on: the plugin's manifest and library (path, size,
// modification time and a hash of the bytes, so a file replaced with the same size and time is
// probed again), the helper that judged it and the host ABI. One file per plugin, under
// <cache>/plugin-probe, replaced atomically; a cache that cannot be read or written costs a probe,
// never a failure.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <map>

// Header-only use: nothing is linked, so the rlx package gains no dependency.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "probe.h"
#include "rlx/sdk/abi.h"

namespace rlx::registry::detail {
namespace {

namespace fs = std::filesystem;

// Bump when the key or the stored verdict changes meaning.
constexpr int kCacheFormat = 1;

struct Stamp {
  std::string key;   // "<size> <mtime ns> <xxh3>": what the verdict is keyed by
  std::string seen;  // "<size> <mtime ns> <dev:inode> <ctime ns> <xxh3>": when it was hashed
};

// The stamp of a file, or nullopt when it cannot be read. Hashing reads the whole file (a debug
// build's plugins are ~150 MB, ~100 ms at memory speed), so the hash is taken from `previous`
// (the file's `seen` when the verdict was stored) while size, mtime, inode and inode change time
// are unchanged: the change time moves with every write, rename or chmod and no program can set
// it back.
std::optional<Stamp> file_stamp(const fs::path& path, std::string_view previous) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<Stamp> out;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const std::string size_time =
        fmt::format("{} {}.{:09}", st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    const std::string seen_prefix = fmt::format("{} {}:{} {}.{:09} ", size_time, st.st_dev,
                                                st.st_ino, st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
    std::string hash;
    if (previous.size() == seen_prefix.size() + 16 && previous.starts_with(seen_prefix)) {
      hash = std::string(previous.substr(seen_prefix.size()));
    } else {
      const size_t size = static_cast<size_t>(st.st_size);
      void* data = size > 0 ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
      if (data != MAP_FAILED) {
        hash = fmt::format("{:016x}", XXH3_64bits(data, size));
        if (data) munmap(data, size);
      }
    }
    if (!hash.empty()) out = Stamp{size_time + " " + hash, seen_prefix + hash};
  }
  close(fd);
  return out;
}

// The rest of the line of `text` that starts with `label`, or "".
std::string_view line_after(std::string_view text, std::string_view label) {
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (line.starts_with(label)) return line.substr(label.size());
    at = end + 1;
  }
  return {};
}

// The helper's size and mtime: a rebuilt helper may judge differently.
std::optional<std::string> helper_stamp(const fs::path& helper) {
  struct stat st {};
  if (stat(helper.c_str(), &st) != 0) return std::nullopt;
  return fmt::format("{} {}.{:09}", st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

std::string hex_hash(std::string_view text) {
  return fmt::format("{:016x}", XXH3_64bits(text.data(), text.size()));
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

ProbeCache::ProbeCache(const ProbeSettings& settings, const PluginRecord& rec) {
  if (settings.cache_dir.empty()) return;
  // One file per plugin (manifest and library), overwritten when its key changes.
  file_ = settings.cache_dir /
          (hex_hash(rec.manifest_path.string() + "\n" + rec.library_path.string()) + ".verdict");
  if (auto bytes = read_file(file_)) {
    std::string error;
    for (auto& [tag, value] : decode_records(*bytes, error)) stored_[tag] = value;
    if (!error.empty()) stored_.clear();
  }
  const std::string manifest_label = "manifest " + rec.manifest_path.string() + " ";
  const std::string library_label = "library " + rec.library_path.string() + " ";
  auto helper = helper_stamp(settings.helper);
  auto manifest = file_stamp(rec.manifest_path, line_after(stored_["seen"], manifest_label));
  auto library = file_stamp(rec.library_path, line_after(stored_["seen"], library_label));
  if (!helper || !manifest || !library) return;
  key_ = fmt::format("format {}\nhost ABI {}.{} {}\nhelper {} {}\n{}{}\n{}{}\n", kCacheFormat,
                     RLX_ABI_MAJOR, RLX_ABI_MINOR, RLX_TOOLCHAIN_TAG, settings.helper.string(),
                     *helper, manifest_label, manifest->key, library_label, library->key);
  seen_ = manifest_label + manifest->seen + "\n" + library_label + library->seen + "\n";
}

std::optional<ProbeVerdict> ProbeCache::recall() const {
  if (key_.empty() || stored_.count("key") == 0 || stored_.at("key") != key_) return std::nullopt;
  auto field = [&](const char* tag) {
    auto it = stored_.find(tag);
    return it == stored_.end() ? std::string() : it->second;
  };
  auto status = status_named(field("status"));
  if (!status || !stored_.count("verdict")) return std::nullopt;
  ProbeVerdict v;
  v.passed = field("verdict") == "passed";
  v.status = *status;
  v.abi = field("abi");
  v.detail = field("detail");
  // Same bytes, touched since (a chmod, a copy back): keep the new stamps so the next command
  // does not hash the files again.
  if (field("seen") != seen_) remember(v);
  return v;
}

void ProbeCache::remember(const ProbeVerdict& v) const {
  if (key_.empty()) return;
  std::error_code ec;
  fs::create_directories(file_.parent_path(), ec);
  const std::string bytes =
      encode_record("key", key_) + encode_record("verdict", v.passed ? "passed" : "failed") +
      encode_record("status", status_name(v.status)) + encode_record("abi", v.abi) +
      encode_record("detail", v.detail) + encode_record("seen", seen_);
  // Written beside and renamed over, so a concurrent rlx reads the old verdict or the new one.
  const fs::path tmp = file_.string() + fmt::format(".tmp.{}", getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << bytes;
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, file_, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace rlx::registry::detail
