#include "mil_block.h"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <utility>

#include "rlx/core/error.h"
#include "rlx/core/half.h"

namespace rlx::ane {

const char* cast_name(mil::DataType t) {
  switch (t) {
    case mil::FLOAT32:
      return "fp32";
    case mil::FLOAT16:
      return "fp16";
    case mil::INT32:
      return "int32";
    case mil::BOOL:
      return "bool";
    default:
      throw_internal_error(fmt::format("ane: no cast name for MIL type {}", static_cast<int>(t)));
  }
}

mil::ValueType value_type(const MilType& t) {
  mil::ValueType v;
  mil::TensorType* tt = v.mutable_tensortype();
  tt->set_datatype(t.dtype);
  tt->set_rank(static_cast<int64_t>(t.shape.size()));
  for (int64_t d : t.shape)
    tt->add_dimensions()->mutable_constant()->set_size(static_cast<uint64_t>(d));
  return v;
}

namespace {

mil::Value string_value(const std::string& s) {
  mil::Value v;
  v.mutable_type()->mutable_tensortype()->set_datatype(mil::STRING);
  v.mutable_immediatevalue()->mutable_tensor()->mutable_strings()->add_values(s);
  return v;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

const MilType& MilBlock::type_of(const std::string& name) const {
  auto it = types_.find(name);
  if (it == types_.end()) throw_internal_error("ane: no MIL value named " + name);
  return it->second;
}

std::string MilBlock::fresh(const std::string& hint) {
  std::string name;
  do name = fmt::format("{}_{}", hint, counter_++);
  while (types_.count(name));
  return name;
}

void MilBlock::declare(const std::string& name, const MilType& t) {
  if (!types_.emplace(name, t).second)
    throw_internal_error("ane: MIL value declared twice: " + name);
}

std::string MilBlock::op(const std::string& type, const std::vector<MilArg>& args,
                         const MilType& out, std::string name) {
  if (name.empty()) name = fresh(type);
  mil::Operation* o = block_->add_operations();
  o->set_type(type);
  for (const MilArg& a : args) {
    mil::Argument& arg = (*o->mutable_inputs())[a.key];
    for (const std::string& n : a.names) {
      (void)type_of(n);  // an argument must name a value made before
      arg.add_arguments()->set_name(n);
    }
  }
  mil::NamedValueType* result = o->add_outputs();
  result->set_name(name);
  *result->mutable_type() = value_type(out);
  (*o->mutable_attributes())["name"] = string_value(name);
  declare(name, out);
  made_.insert(name);
  return name;
}

bool MilBlock::rename(const std::string& from, const std::string& to) {
  if (!made_.count(from) || types_.count(to)) return false;
  for (mil::Operation& o : *block_->mutable_operations()) {
    for (auto& [key, arg] : *o.mutable_inputs())
      for (mil::Argument::Binding& b : *arg.mutable_arguments())
        if (b.has_name() && b.name() == from) b.set_name(to);
    for (mil::NamedValueType& out : *o.mutable_outputs())
      if (out.name() == from) {
        out.set_name(to);
        (*o.mutable_attributes())["name"] = string_value(to);
      }
  }
  types_.emplace(to, types_.at(from));
  types_.erase(from);
  made_.erase(from);
  made_.insert(to);
  return true;
}

std::string MilBlock::const_op(mil::Value value, const MilType& t) {
  const std::string name = fresh("const");
  *value.mutable_type() = value_type(t);
  mil::Operation* o = block_->add_operations();
  o->set_type("const");
  mil::NamedValueType* result = o->add_outputs();
  result->set_name(name);
  *result->mutable_type() = value_type(t);
  (*o->mutable_attributes())["val"] = std::move(value);
  (*o->mutable_attributes())["name"] = string_value(name);
  declare(name, t);
  consts_.insert(name);
  return name;
}

std::string MilBlock::constant(const Tensor& t) {
  const int64_t n = t.numel();
  MilType type{mil::FLOAT32, t.shape()};
  mil::Value v;
  // Numbers past the inline limit go to the weights file (the format stores no bool blobs).
  static const std::map<DType, std::pair<mil::DataType, BlobType>> kStored = {
      {DType::kF32, {mil::FLOAT32, BlobType::kF32}},
      {DType::kF16, {mil::FLOAT16, BlobType::kF16}},
      {DType::kI32, {mil::INT32, BlobType::kI32}}};
  auto stored = kStored.find(t.dtype());
  if (stored != kStored.end()) type.dtype = stored->second.first;
  if (stored != kStored.end() && n > kInlineLimit) {
    mil::Value::BlobFileValue* b = v.mutable_blobfilevalue();
    b->set_filename(weights_file_);
    b->set_offset(blobs_->add(stored->second.second, t.data(), t.nbytes()));
    return const_op(std::move(v), type);
  }
  mil::TensorValue* tv = v.mutable_immediatevalue()->mutable_tensor();
  switch (t.dtype()) {
    case DType::kF32:
      for (int64_t i = 0; i < n; ++i) tv->mutable_floats()->add_values(t.as<float>()[i]);
      break;
    case DType::kF16:
      tv->mutable_bytes()->set_values(std::string(static_cast<const char*>(t.data()), t.nbytes()));
      break;
    case DType::kI32:
      for (int64_t i = 0; i < n; ++i) tv->mutable_ints()->add_values(t.as<int32_t>()[i]);
      break;
    case DType::kBool:
      type.dtype = mil::BOOL;
      for (int64_t i = 0; i < n; ++i) tv->mutable_bools()->add_values(t.as<uint8_t>()[i] != 0);
      break;
    default:
      throw_internal_error(fmt::format("ane: no MIL constant of {}", dtype_name(t.dtype())));
  }
  return const_op(std::move(v), type);
}

std::string MilBlock::int8_weight(const Tensor& q) {
  if (q.dtype() != DType::kI8) throw_internal_error("ane: int8_weight of a non-i8 tensor");
  auto typed = [](mil::Value v, const MilType& t) {
    *v.mutable_type() = value_type(t);
    return v;
  };
  const MilType data{mil::INT8, q.shape()};
  mil::Value quantized;
  if (q.numel() > kInlineLimit) {
    mil::Value::BlobFileValue* b = quantized.mutable_blobfilevalue();
    b->set_filename(weights_file_);
    b->set_offset(blobs_->add(BlobType::kI8, q.data(), q.nbytes()));
  } else {
    quantized.mutable_immediatevalue()->mutable_tensor()->mutable_bytes()->set_values(
        std::string(static_cast<const char*>(q.data()), q.nbytes()));
  }
  mil::Value zero, scale, axis;
  zero.mutable_immediatevalue()->mutable_tensor()->mutable_bytes()->set_values(std::string(1, '\0'));
  scale.mutable_immediatevalue()->mutable_tensor()->mutable_floats()->add_values(1.0f);
  axis.mutable_immediatevalue()->mutable_tensor()->mutable_ints()->add_values(0);
  const std::string name = fresh("int8_weight");
  const MilType out{mil::FLOAT32, q.shape()};
  mil::Operation* o = block_->add_operations();
  o->set_type("constexpr_affine_dequantize");
  // The iOS16 op's parameters are attributes, as coremltools writes them in every opset (iOS18's
  // own constexpr ops take inputs).
  auto& attrs = *o->mutable_attributes();
  attrs["quantized_data"] = typed(std::move(quantized), data);
  attrs["zero_point"] = typed(std::move(zero), {mil::INT8, {}});
  attrs["scale"] = typed(std::move(scale), {mil::FLOAT32, {}});
  attrs["axis"] = typed(std::move(axis), {mil::INT32, {}});
  attrs["name"] = string_value(name);
  mil::NamedValueType* result = o->add_outputs();
  result->set_name(name);
  *result->mutable_type() = value_type(out);
  declare(name, out);
  consts_.insert(name);
  return name;
}

std::string MilBlock::f32(double x) {
  mil::Value v;
  v.mutable_immediatevalue()->mutable_tensor()->mutable_floats()->add_values(static_cast<float>(x));
  return const_op(std::move(v), {mil::FLOAT32, {}});
}

std::string MilBlock::i32(int64_t x) {
  mil::Value v;
  v.mutable_immediatevalue()->mutable_tensor()->mutable_ints()->add_values(static_cast<int32_t>(x));
  return const_op(std::move(v), {mil::INT32, {}});
}

std::string MilBlock::boolean(bool x) {
  mil::Value v;
  v.mutable_immediatevalue()->mutable_tensor()->mutable_bools()->add_values(x);
  return const_op(std::move(v), {mil::BOOL, {}});
}

std::string MilBlock::ints(const std::vector<int64_t>& xs) {
  mil::Value v;
  mil::TensorValue::RepeatedInts* r = v.mutable_immediatevalue()->mutable_tensor()->mutable_ints();
  for (int64_t x : xs) r->add_values(static_cast<int32_t>(x));
  return const_op(std::move(v), {mil::INT32, {static_cast<int64_t>(xs.size())}});
}

std::string MilBlock::string(const std::string& s) {
  return const_op(string_value(s), {mil::STRING, {}});
}

std::string MilBlock::filled(const MilType& type, double value) {
  const int64_t n = numel(type.shape);
  switch (type.dtype) {
    case mil::FLOAT32: {
      Tensor t(DType::kF32, type.shape);
      for (int64_t i = 0; i < n; ++i) t.as<float>()[i] = static_cast<float>(value);
      return constant(t);
    }
    case mil::FLOAT16: {
      Tensor t(DType::kF16, type.shape);
      const uint16_t h = f32_to_f16(static_cast<float>(value));
      for (int64_t i = 0; i < n; ++i) t.as<uint16_t>()[i] = h;
      return constant(t);
    }
    case mil::INT32: {
      Tensor t(DType::kI32, type.shape);
      for (int64_t i = 0; i < n; ++i) t.as<int32_t>()[i] = static_cast<int32_t>(value);
      return constant(t);
    }
    case mil::BOOL: {
      Tensor t(DType::kBool, type.shape);
      for (int64_t i = 0; i < n; ++i) t.as<uint8_t>()[i] = value != 0;
      return constant(t);
    }
    default:
      throw_internal_error("ane: filled() of an unsupported MIL type");
  }
}

}  // namespace rlx::ane
