#include "proto_io.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>

#include <cstring>
#include <fstream>
#include <limits>

#include "carried_types.h"
#include "rlx/core/error.h"
#include "rlx/core/model_files.h"
#include "rlx/core/half.h"

namespace rlx::onnx {

namespace fs = std::filesystem;
using ::onnx::TensorProto;

std::optional<DType> dtype_from_onnx(int t) {
  switch (t) {
    case TensorProto::FLOAT:
      return DType::kF32;
    case TensorProto::UINT8:
      return DType::kU8;
    case TensorProto::INT8:
      return DType::kI8;
    case TensorProto::INT16:
      return DType::kI16;
    case TensorProto::INT32:
      return DType::kI32;
    case TensorProto::INT64:
      return DType::kI64;
    case TensorProto::BOOL:
      return DType::kBool;
    case TensorProto::FLOAT16:
      return DType::kF16;
    case TensorProto::DOUBLE:
      return DType::kF64;
    case TensorProto::COMPLEX64:
      return DType::kC64;
    case TensorProto::BFLOAT16:
      return DType::kBF16;
    case TensorProto::UINT16:
      return DType::kU16;
    case TensorProto::UINT32:
      return DType::kU32;
    case TensorProto::UINT64:
      return DType::kU64;
    default:
      return std::nullopt;
  }
}

int onnx_from_dtype(DType d) {
  switch (d) {
    case DType::kF32:
      return TensorProto::FLOAT;
    case DType::kU8:
      return TensorProto::UINT8;
    case DType::kI8:
      return TensorProto::INT8;
    case DType::kI16:
      return TensorProto::INT16;
    case DType::kI32:
      return TensorProto::INT32;
    case DType::kI64:
      return TensorProto::INT64;
    case DType::kBool:
      return TensorProto::BOOL;
    case DType::kF16:
      return TensorProto::FLOAT16;
    case DType::kF64:
      return TensorProto::DOUBLE;
    case DType::kC64:
      return TensorProto::COMPLEX64;
    case DType::kBF16:
      return TensorProto::BFLOAT16;
    case DType::kU16:
      return TensorProto::UINT16;
    case DType::kU32:
      return TensorProto::UINT32;
    case DType::kU64:
      return TensorProto::UINT64;
  }
  return 0;
}

std::string onnx_dtype_name(int t) {
  // Names of the types added after the protobuf definitions rlx builds against (onnx 1.12).
  static const char* kNames[] = {
      "UNDEFINED",      "FLOAT",    "UINT8",        "INT8",           "UINT16",
      "INT16",          "INT32",    "INT64",        "STRING",         "BOOL",
      "FLOAT16",        "DOUBLE",   "UINT32",       "UINT64",         "COMPLEX64",
      "COMPLEX128",     "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
      "FLOAT8E5M2FNUZ", "UINT4",    "INT4",         "FLOAT4E2M1",     "FLOAT8E8M0",
      "UINT2",          "INT2"};
  if (t >= 0 && t < static_cast<int>(std::size(kNames))) return kNames[t];
  return fmt::format("type {}", t);
}

std::string describe_onnx_dtype(int t) {
  if (auto d = dtype_from_onnx(t)) return std::string(dtype_name(*d));
  if (auto c = carried_type(t))
    return fmt::format(
        "{} (carried as {}: only Cast, CastLike, QuantizeLinear, DequantizeLinear and "
        "data movement accept it)",
        onnx_dtype_name(t), dtype_name(c->storage));
  return fmt::format("{} (rlx has no such dtype)", onnx_dtype_name(t));
}

std::string read_file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_user_error(fmt::format("cannot open {}", path.string()));
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) throw_user_error(fmt::format("cannot read {}", path.string()));
  in.seekg(0);
  std::string bytes(static_cast<size_t>(size), '\0');
  if (size && !in.read(bytes.data(), size))
    throw_user_error(fmt::format("cannot read {}", path.string()));
  return bytes;
}

::onnx::ModelProto parse_model(std::string_view bytes, const std::string& display_name) {
  // protobuf's own limit is 2 GiB per message; weights above that live in external data files.
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw_user_error(
        fmt::format("{}: {} bytes is more than a protobuf message may hold (2 GiB); "
                    "store the weights as external data",
                    display_name, bytes.size()));
  ::onnx::ModelProto m;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(std::numeric_limits<int>::max());
  in.SetRecursionLimit(64);
  if (!m.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    throw_user_error(fmt::format(
        "{}: not a valid ONNX model (the protobuf ModelProto does not parse)", display_name));
  if (!m.has_graph())
    throw_user_error(fmt::format("{}: the ModelProto has no graph", display_name));
  return m;
}

namespace {

// Bytes per element of an ONNX type in raw_data / external data, for the types rlx reads.
size_t raw_size(int t) {
  auto d = dtype_from_onnx(t);
  return d ? dtype_size(*d) : 0;
}

int64_t checked_numel(const TensorProto& t, const std::string& where) {
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) throw_user_error(fmt::format("{}: negative dim {}", where, d));
    if (__builtin_mul_overflow(n, d, &n) || n > (int64_t{1} << 40))
      throw_user_error(fmt::format("{}: dims hold more elements than rlx can address", where));
  }
  return n;
}

std::string external_path(const TensorProto& t, const fs::path& base_dir, const std::string& where,
                          int64_t* offset, int64_t* length) {
  std::string location;
  *offset = 0;
  *length = -1;
  for (const auto& kv : t.external_data()) {
    auto number = [&](const char* key) {
      try {
        size_t used = 0;
        int64_t v = std::stoll(kv.value(), &used);
        if (used != kv.value().size() || v < 0) throw std::invalid_argument("bad");
        return v;
      } catch (...) {
        throw_user_error(fmt::format("{}: external_data {} '{}' is not a non-negative integer",
                                     where, key, kv.value()));
      }
    };
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      *offset = number("offset");
    else if (kv.key() == "length")
      *length = number("length");
  }
  if (location.empty())
    throw_user_error(fmt::format("{}: external data without a location", where));
  fs::path rel(location);
  // Like onnx.checker: the data file must lie under the model's folder.
  if (rel.is_absolute())
    throw_user_error(fmt::format("{}: external data location '{}' is absolute", where, location));
  for (const auto& part : rel)
    if (part == "..")
      throw_user_error(fmt::format("{}: external data location '{}' leaves the model's folder",
                                   where, location));
  return file_in_model_folder(base_dir, location, fmt::format("{}: external data", where)).string();
}

template <typename Src, typename Dst>
void copy_field(const google::protobuf::RepeatedField<Src>& f, int64_t n, Dst* out,
                const std::string& where, const char* field) {
  if (f.size() != n)
    throw_user_error(
        fmt::format("{}: {} holds {} values for {} elements", where, field, f.size(), n));
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Dst>(f.Get(static_cast<int>(i)));
}

}  // namespace

Tensor tensor_from_proto(const TensorProto& t, const fs::path& base_dir, const std::string& where) {
  int type = t.data_type();
  if (t.has_segment())
    throw_user_error(fmt::format("{}: segmented tensors are not supported", where));
  if (auto carried = carried_type(type)) {
    int64_t cn = checked_numel(t, where);
    if (t.data_location() == TensorProto::EXTERNAL)
      throw_user_error(fmt::format("{}: external data of type {} is not supported", where,
                                   onnx_dtype_name(type)));
    return carried_from_proto(t, *carried, cn, where);
  }
  auto dt = dtype_from_onnx(type);
  if (!dt) throw_user_error(fmt::format("{}: element type {}", where, describe_onnx_dtype(type)));
  int64_t n = checked_numel(t, where);
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  size_t es = raw_size(type);
  size_t nbytes = static_cast<size_t>(n) * es;

  if (t.data_location() == TensorProto::EXTERNAL) {
    int64_t offset, length;
    std::string file = external_path(t, base_dir, where, &offset, &length);
    if (length >= 0 && static_cast<size_t>(length) != nbytes)
      throw_user_error(
          fmt::format("{}: external data length {} differs from the {} bytes of its {} elements",
                      where, length, nbytes, n));
    std::ifstream in(file, std::ios::binary);
    if (!in) throw_user_error(fmt::format("{}: cannot open external data file {}", where, file));
    in.seekg(0, std::ios::end);
    auto size = static_cast<int64_t>(in.tellg());
    if (offset > size || static_cast<int64_t>(nbytes) > size - offset)
      throw_user_error(
          fmt::format("{}: external data [{}, {}) lies beyond the end of {} ({} bytes)", where,
                      offset, offset + static_cast<int64_t>(nbytes), file, size));
    Tensor out(*dt, shape);
    in.seekg(offset);
    if (nbytes && !in.read(static_cast<char*>(out.data()), static_cast<std::streamsize>(nbytes)))
      throw_user_error(fmt::format("{}: cannot read external data from {}", where, file));
    return out;
  }

  if (t.has_raw_data()) {
    if (t.raw_data().size() != nbytes)
      throw_user_error(fmt::format("{}: raw_data holds {} bytes, {} {} elements need {}", where,
                                   t.raw_data().size(), n, dtype_name(*dt), nbytes));
    Tensor out(*dt, shape);
    if (nbytes) std::memcpy(out.data(), t.raw_data().data(), nbytes);
    return out;
  }
  // Sizes are checked before anything is allocated, so a few bytes cannot ask for terabytes.
  int64_t held = *dt == DType::kF32 || *dt == DType::kC64 ? t.float_data_size()
                 : *dt == DType::kF64                     ? t.double_data_size()
                 : *dt == DType::kI64                     ? t.int64_data_size()
                 : *dt == DType::kU32 || *dt == DType::kU64 ? t.uint64_data_size()
                                                          : t.int32_data_size();
  int64_t want = *dt == DType::kC64 ? 2 * n : n;
  if (held != want)
    throw_user_error(
        fmt::format("{}: the typed data field holds {} values for {} elements", where, held, n));
  Tensor out(*dt, shape);
  switch (*dt) {
    case DType::kF32:
      copy_field(t.float_data(), n, out.as<float>(), where, "float_data");
      break;
    case DType::kF64:
      copy_field(t.double_data(), n, out.as<double>(), where, "double_data");
      break;
    case DType::kI64:
      copy_field(t.int64_data(), n, out.as<int64_t>(), where, "int64_data");
      break;
    case DType::kI32:
      copy_field(t.int32_data(), n, out.as<int32_t>(), where, "int32_data");
      break;
    case DType::kI16:
      copy_field(t.int32_data(), n, out.as<int16_t>(), where, "int32_data");
      break;
    case DType::kI8:
      copy_field(t.int32_data(), n, out.as<int8_t>(), where, "int32_data");
      break;
    case DType::kU8:
      copy_field(t.int32_data(), n, out.as<uint8_t>(), where, "int32_data");
      break;
    case DType::kBool: {
      copy_field(t.int32_data(), n, out.as<uint8_t>(), where, "int32_data");
      for (int64_t i = 0; i < n; ++i) out.as<uint8_t>()[i] = out.as<uint8_t>()[i] != 0;
      break;
    }
    // 16-bit floats travel as their bit patterns in int32_data.
    case DType::kF16:
    case DType::kBF16:
      copy_field(t.int32_data(), n, out.as<uint16_t>(), where, "int32_data");
      break;
    case DType::kC64:
      copy_field(t.float_data(), 2 * n, out.as<float>(), where, "float_data");
      break;
    // UINT16 travels in int32_data, UINT32 and UINT64 in uint64_data.
    case DType::kU16:
      copy_field(t.int32_data(), n, out.as<uint16_t>(), where, "int32_data");
      break;
    case DType::kU32:
      copy_field(t.uint64_data(), n, out.as<uint32_t>(), where, "uint64_data");
      break;
    case DType::kU64:
      copy_field(t.uint64_data(), n, out.as<uint64_t>(), where, "uint64_data");
      break;
  }
  return out;
}

}  // namespace rlx::onnx
