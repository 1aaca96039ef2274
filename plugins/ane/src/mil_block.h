// A MIL block under construction: typed values by name, const ops (small values inline, larger
// ones in the package's weights file) and operations with named arguments. Every other file of
// the target speaks to the protobuf messages through this one.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "blob_storage.h"
#include "mil.pb.h"
#include "rlx/core/tensor.h"

namespace rlx::ane {

namespace mil = CoreML::Specification::MILSpec;

// A value's type in the program: the MIL element type and a static shape.
struct MilType {
  mil::DataType dtype = mil::FLOAT32;
  std::vector<int64_t> shape;
};

// "fp32", "fp16", "int32", "bool": the names cast's dtype argument takes.
const char* cast_name(mil::DataType t);

// One argument of an operation: a value name, or several for list arguments (concat's values).
struct MilArg {
  std::string key;
  std::vector<std::string> names;
  MilArg(std::string k, std::string name) : key(std::move(k)), names{std::move(name)} {}
  MilArg(std::string k, std::vector<std::string> list)
      : key(std::move(k)), names(std::move(list)) {}
};

class MilBlock {
 public:
  MilBlock(mil::Block* block, BlobStorage* blobs, std::string weights_file)
      : block_(block), blobs_(blobs), weights_file_(std::move(weights_file)) {}

  // Appends an operation of `type` with one output of type `out` and returns its name (`name`
  // when given, else a fresh one).
  std::string op(const std::string& type, const std::vector<MilArg>& args, const MilType& out,
                 std::string name = {});

  // Const ops. Tensors of f32, f16, i32 and bool; values of more than kInlineLimit elements go
  // to the weights file (bool stays inline: the format stores no bool blobs).
  std::string constant(const Tensor& t);
  std::string f32(double v);
  std::string i32(int64_t v);
  std::string boolean(bool v);
  std::string ints(const std::vector<int64_t>& v);  // a rank-1 int32 tensor
  std::string string(const std::string& v);
  // A const of `type` with every element `value`.
  std::string filled(const MilType& type, double value);
  // An i8 tensor kept as int8 bytes in the weights file: MIL's constexpr_affine_dequantize
  // (iOS16+) with scale 1 and zero point 0, so its fp32 values are the integers themselves and
  // whatever scales them stays in rlx's order of operations. A const for is_const (MIL's linear
  // takes it as its weight).
  std::string int8_weight(const Tensor& q);

  const MilType& type_of(const std::string& name) const;
  // Gives the value an op made the name `to` everywhere in the block (a program output's name
  // without an identity op); false, changing nothing, for a const, an input or a name in use.
  bool rename(const std::string& from, const std::string& to);
  // Whether `name` is a const op's value (MIL requires some arguments to be: linear's weight).
  bool is_const(const std::string& name) const { return consts_.count(name) != 0; }
  std::string fresh(const std::string& hint);
  void declare(const std::string& name, const MilType& t);  // a function input

  static constexpr int64_t kInlineLimit = 16;

 private:
  std::string const_op(mil::Value value, const MilType& t);

  mil::Block* block_;
  BlobStorage* blobs_;
  std::string weights_file_;
  std::unordered_map<std::string, MilType> types_;
  std::unordered_set<std::string> consts_, made_;  // const ops' values; other ops' values
  int64_t counter_ = 0;
};

// The protobuf value type of `t`.
mil::ValueType value_type(const MilType& t);

}  // namespace rlx::ane
