#include "image_data.h"

#include <fmt/format.h>
#include <zlib.h>

#include <cstring>
#include <random>
#include <vector>

#include "rlx/core/error.h"

namespace rlx::cli {

namespace {

namespace fs = std::filesystem;

// gzread reads gzip and plain files alike.
std::vector<uint8_t> read_maybe_gzip(const fs::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw_user_error(fmt::format("{}: cannot open it", path.string()));
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  int err = 0;
  std::string why = n < 0 ? gzerror(f, &err) : "";
  gzclose(f);
  if (n < 0) throw_user_error(fmt::format("{}: not a readable gzip or IDX file ({})", path.string(), why));
  return out;
}

uint32_t big_endian(const std::vector<uint8_t>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) | b[at + 3];
}

// An IDX file of unsigned bytes with `rank` dims (MNIST: images rank 3, labels rank 1).
std::pair<std::vector<int64_t>, std::vector<uint8_t>> read_idx(const fs::path& path, int rank) {
  std::vector<uint8_t> b = read_maybe_gzip(path);
  size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (b.size() < header || b[0] != 0 || b[1] != 0 || b[2] != 0x08 || b[3] != rank)
    throw_user_error(fmt::format("{}: not an IDX file of unsigned bytes with {} dims (magic 0x0000080{})",
                                 path.string(), rank, rank));
  std::vector<int64_t> dims;
  size_t count = 1;
  for (int i = 0; i < rank; ++i) {
    dims.push_back(big_endian(b, 4 + 4 * i));
    count *= static_cast<size_t>(dims.back());
  }
  if (b.size() - header != count)
    throw_user_error(fmt::format("{}: holds {} bytes of data, its dims say {}", path.string(),
                                 b.size() - header, count));
  return {dims, std::vector<uint8_t>(b.begin() + static_cast<int64_t>(header), b.end())};
}

std::optional<fs::path> find_file(const fs::path& dir, const std::string& prefix, const std::string& kind) {
  for (const std::string& name : {prefix + "-" + kind, prefix + "-" + kind.substr(0, kind.find('-')) +
                                                           "." + kind.substr(kind.find('-') + 1)})
    for (const char* ext : {"", ".gz"})
      if (fs::exists(dir / (name + ext))) return dir / (name + ext);
  return std::nullopt;
}

std::optional<ImageSet> read_split(const fs::path& dir, const std::string& prefix, bool required) {
  auto images = find_file(dir, prefix, "images-idx3-ubyte");
  auto labels = find_file(dir, prefix, "labels-idx1-ubyte");
  if (!images || !labels) {
    if (!required) return std::nullopt;
    throw_user_error(fmt::format("{}: has no {}-images-idx3-ubyte and {}-labels-idx1-ubyte (plain or .gz); "
                                 "give a folder of MNIST's IDX files or synthetic:N",
                                 dir.string(), prefix, prefix));
  }
  auto [idims, ibytes] = read_idx(*images, 3);
  auto [ldims, lbytes] = read_idx(*labels, 1);
  if (ldims[0] != idims[0])
    throw_user_error(fmt::format("{} holds {} images but {} holds {} labels", images->string(), idims[0],
                                 labels->string(), ldims[0]));
  ImageSet s{Tensor(DType::kU8, idims), Tensor(DType::kI32, {ldims[0]}), 0};
  std::memcpy(s.images.data(), ibytes.data(), ibytes.size());
  for (size_t i = 0; i < lbytes.size(); ++i) {
    s.labels.as<int32_t>()[i] = lbytes[i];
    s.classes = std::max<int64_t>(s.classes, lbytes[i] + 1);
  }
  return s;
}

ImageSet synthetic(int64_t n, const std::vector<std::vector<uint8_t>>& patterns, uint32_t seed) {
  std::mt19937 rng(seed);
  ImageSet s{Tensor(DType::kU8, {n, 28, 28}), Tensor(DType::kI32, {n}), 10};
  for (int64_t i = 0; i < n; ++i) {
    auto c = static_cast<int32_t>(rng() % 10);
    s.labels.as<int32_t>()[i] = c;
    uint8_t* img = s.images.as<uint8_t>() + i * 784;
    // Half the pattern, half noise: learnable, but not in one step.
    for (int k = 0; k < 784; ++k) img[k] = static_cast<uint8_t>((patterns[c][k] + (rng() & 0xFF)) / 2);
  }
  return s;
}

}  // namespace

ImageData read_image_data(const std::string& spec) {
  ImageData d;
  d.source = spec;
  if (spec.rfind("synthetic:", 0) == 0) {
    std::string count = spec.substr(10);
    char* end = nullptr;
    long long n = std::strtoll(count.c_str(), &end, 10);
    if (count.empty() || *end != '\0' || n <= 0)
      throw_user_error(fmt::format("--data {}: N must be a positive number of images (e.g. synthetic:60000)", spec));
    std::mt19937 rng(20261202);
    std::vector<std::vector<uint8_t>> patterns(10, std::vector<uint8_t>(784));
    for (auto& p : patterns)
      for (uint8_t& v : p) v = static_cast<uint8_t>(rng() & 0xFF);
    d.train = synthetic(n, patterns, 1);
    d.test = synthetic(std::max<long long>(n / 6, 1), patterns, 2);
    return d;
  }
  fs::path dir = spec;
  if (!fs::is_directory(dir))
    throw_user_error(fmt::format("--data {}: not a folder; give a folder of MNIST's IDX files or synthetic:N", spec));
  d.train = *read_split(dir, "train", true);
  d.test = read_split(dir, "t10k", false);
  return d;
}

Tensor scaled_inputs(const Tensor& images) {
  int64_t n = images.shape()[0];
  int64_t pixels = images.numel() / std::max<int64_t>(n, 1);
  Tensor x(DType::kF32, {n, pixels});
  const uint8_t* src = images.as<uint8_t>();
  float* dst = x.as<float>();
  for (int64_t i = 0; i < images.numel(); ++i) dst[i] = static_cast<float>(src[i]) * (2.0f / 255.0f) - 1.0f;
  return x;
}

}  // namespace rlx::cli
