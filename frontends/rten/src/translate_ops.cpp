// One rten operator -> its ONNX form (opset 18): the op name (rten's operator names are ONNX's),
// the attributes read from the operator's FlatBuffers table, and the dtype bridges rten needs.
// An attribute table that is absent reads as all defaults, as rten reads it; a table of the wrong
// kind is an error.
#include <fmt/format.h>

#include "rlx/core/error.h"
#include "translate.h"

namespace rlx::rten {

namespace {

using ::onnx::AttributeProto;
using ::onnx::TensorProto;
using OT = fb::OperatorType;
using OA = fb::OperatorAttrs;

AttributeProto attr_i(const char* name, int64_t v) {
  AttributeProto a;
  a.set_name(name);
  a.set_type(AttributeProto::INT);
  a.set_i(v);
  return a;
}

AttributeProto attr_f(const char* name, float v) {
  AttributeProto a;
  a.set_name(name);
  a.set_type(AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

AttributeProto attr_s(const char* name, const std::string& v) {
  AttributeProto a;
  a.set_name(name);
  a.set_type(AttributeProto::STRING);
  a.set_s(v);
  return a;
}

template <typename V>
AttributeProto attr_ints(const char* name, const V* v) {
  AttributeProto a;
  a.set_name(name);
  a.set_type(AttributeProto::INTS);
  if (v)
    for (auto x : *v) a.add_ints(static_cast<int64_t>(x));
  return a;
}

int onnx_type(fb::DataType t, const std::string& where) {
  switch (t) {
    case fb::DataType::Int32:
      return TensorProto::INT32;
    case fb::DataType::Float:
      return TensorProto::FLOAT;
    case fb::DataType::Int8:
      return TensorProto::INT8;
    case fb::DataType::UInt8:
      return TensorProto::UINT8;
  }
  throw_user_error(
      fmt::format("{}: element type {} is not one rten defines", where, static_cast<int>(t)));
}

const char* rnn_direction(fb::RNNDirection d) {
  switch (d) {
    case fb::RNNDirection::Reverse:
      return "reverse";
    case fb::RNNDirection::Bidirectional:
      return "bidirectional";
    default:
      return "forward";
  }
}

const char* auto_pad(fb::AutoPad p) {
  return p == fb::AutoPad::Same ? "SAME_UPPER" : "NOTSET";
}

const char* scatter_reduction(fb::ScatterReduction r) {
  switch (r) {
    case fb::ScatterReduction::Add:
      return "add";
    case fb::ScatterReduction::Mul:
      return "mul";
    case fb::ScatterReduction::Min:
      return "min";
    case fb::ScatterReduction::Max:
      return "max";
    default:
      return "none";
  }
}

// The attribute table an operator carries; `Expected` is the union member for its kind.
template <typename T>
const T* table(const fb::OperatorNode& op, OA expected, const std::string& where) {
  if (op.attrs_type() == OA::NONE) return nullptr;
  if (op.attrs_type() != expected || !op.attrs())
    throw_user_error(fmt::format("{}: carries {} attributes; this operator takes {}", where,
                                 *fb::EnumNameOperatorAttrs(op.attrs_type())
                                     ? fb::EnumNameOperatorAttrs(op.attrs_type())
                                     : "unknown",
                                 fb::EnumNameOperatorAttrs(expected)));
  return static_cast<const T*>(op.attrs());
}

// Reads a field, or its schema default when the table is absent.
template <typename T, typename F, typename D>
auto get(const T* t, F field, D fallback) {
  return t ? (t->*field)() : fallback;
}

void pool_attrs(OpPlan& p, const flatbuffers::Vector<uint32_t>* kernel, fb::AutoPad pad,
                const flatbuffers::Vector<uint32_t>* pads,
                const flatbuffers::Vector<uint32_t>* strides, const std::string& where) {
  if (!kernel) throw_user_error(where + ": has no kernel size");
  p.attrs.push_back(attr_ints("kernel_shape", kernel));
  p.attrs.push_back(attr_s("auto_pad", auto_pad(pad)));
  if (pads && pad != fb::AutoPad::Same) p.attrs.push_back(attr_ints("pads", pads));
  if (strides && strides->size()) p.attrs.push_back(attr_ints("strides", strides));
}

}  // namespace

OpPlan plan_op(const fb::OperatorNode& op, const std::string& where) {
  OpPlan p;
  const char* name = fb::EnumNameOperatorType(op.type());
  if (!*name)
    throw_user_error(
        fmt::format("{}: operator type {} is not known to rlx's rten importer (the "
                    "file may come from a newer rten)",
                    where, static_cast<int>(op.type())));
  p.op_type = name;
  auto& a = p.attrs;
  switch (op.type()) {
    case OT::ArgMin:
    case OT::ArgMax: {
      const auto* t = table<fb::ArgMaxAttrs>(op, OA::ArgMaxAttrs, where);
      a.push_back(attr_i("axis", get(t, &fb::ArgMaxAttrs::axis, 0)));
      a.push_back(attr_i("keepdims", get(t, &fb::ArgMaxAttrs::keep_dims, false)));
      p.int32_outputs = {0};
      break;
    }
    case OT::AveragePool: {
      const auto* t = table<fb::AveragePoolAttrs>(op, OA::AveragePoolAttrs, where);
      if (!t) throw_user_error(where + ": has no AveragePoolAttrs");
      pool_attrs(p, t->kernel_size(), t->auto_pad(), t->pads(), t->strides(), where);
      a.push_back(attr_i("count_include_pad", t->count_include_pad()));
      a.push_back(attr_i("ceil_mode", t->ceil_mode()));
      break;
    }
    case OT::MaxPool: {
      const auto* t = table<fb::MaxPoolAttrs>(op, OA::MaxPoolAttrs, where);
      if (!t) throw_user_error(where + ": has no MaxPoolAttrs");
      pool_attrs(p, t->kernel_size(), t->auto_pad(), t->pads(), t->strides(), where);
      a.push_back(attr_i("ceil_mode", t->ceil_mode()));
      break;
    }
    case OT::BatchNormalization:
    case OT::InstanceNormalization: {
      const auto* t = table<fb::BatchNormalizationAttrs>(op, OA::BatchNormalizationAttrs, where);
      a.push_back(attr_f("epsilon", get(t, &fb::BatchNormalizationAttrs::epsilon, 0.0f)));
      break;
    }
    case OT::Cast: {
      const auto* t = table<fb::CastAttrs>(op, OA::CastAttrs, where);
      a.push_back(attr_i("to", onnx_type(get(t, &fb::CastAttrs::to, fb::DataType::Int32), where)));
      break;
    }
    case OT::Concat: {
      const auto* t = table<fb::ConcatAttrs>(op, OA::ConcatAttrs, where);
      a.push_back(attr_i("axis", get(t, &fb::ConcatAttrs::axis, 0)));
      break;
    }
    case OT::ConstantOfShape: {
      const auto* t = table<fb::ConstantOfShapeAttrs>(op, OA::ConstantOfShapeAttrs, where);
      AttributeProto v;
      v.set_name("value");
      v.set_type(AttributeProto::TENSOR);
      TensorProto* tp = v.mutable_t();
      tp->add_dims(1);
      if (t && t->value_type() == fb::Scalar::IntScalar && t->value_as_IntScalar()) {
        tp->set_data_type(TensorProto::INT32);
        tp->add_int32_data(t->value_as_IntScalar()->value());
      } else if (t && t->value_type() == fb::Scalar::FloatScalar && t->value_as_FloatScalar()) {
        tp->set_data_type(TensorProto::FLOAT);
        tp->add_float_data(t->value_as_FloatScalar()->value());
      } else {
        throw_user_error(where + ": has no fill value");
      }
      a.push_back(std::move(v));
      break;
    }
    case OT::Conv:
    case OT::ConvInteger: {
      const auto* t = table<fb::ConvAttrs>(op, OA::ConvAttrs, where);
      fb::AutoPad pad = get(t, &fb::ConvAttrs::auto_pad, fb::AutoPad::Same);
      a.push_back(attr_s("auto_pad", auto_pad(pad)));
      if (t && t->pads() && pad != fb::AutoPad::Same) a.push_back(attr_ints("pads", t->pads()));
      a.push_back(attr_i("group", std::max<uint32_t>(get(t, &fb::ConvAttrs::groups, 1u), 1u)));
      if (t && t->strides() && t->strides()->size())
        a.push_back(attr_ints("strides", t->strides()));
      if (t && t->dilations() && t->dilations()->size())
        a.push_back(attr_ints("dilations", t->dilations()));
      break;
    }
    case OT::ConvTranspose: {
      const auto* t = table<fb::ConvTransposeAttrs>(op, OA::ConvTransposeAttrs, where);
      fb::AutoPad pad = get(t, &fb::ConvTransposeAttrs::auto_pad, fb::AutoPad::NotSet);
      a.push_back(attr_s("auto_pad", auto_pad(pad)));
      if (t && t->pads() && pad != fb::AutoPad::Same) a.push_back(attr_ints("pads", t->pads()));
      a.push_back(
          attr_i("group", std::max<uint32_t>(get(t, &fb::ConvTransposeAttrs::groups, 1u), 1u)));
      if (t && t->strides() && t->strides()->size())
        a.push_back(attr_ints("strides", t->strides()));
      if (t && t->output_padding() && t->output_padding()->size())
        a.push_back(attr_ints("output_padding", t->output_padding()));
      break;
    }
    case OT::DepthToSpace: {
      const auto* t = table<fb::DepthToSpaceAttrs>(op, OA::DepthToSpaceAttrs, where);
      a.push_back(attr_s("mode", get(t, &fb::DepthToSpaceAttrs::mode, fb::DepthToSpaceMode::DCR) ==
                                         fb::DepthToSpaceMode::CRD
                                     ? "CRD"
                                     : "DCR"));
      a.push_back(attr_i("blocksize", get(t, &fb::DepthToSpaceAttrs::block_size, 0u)));
      break;
    }
    case OT::Dropout: {
      const auto* t = table<fb::DropoutAttrs>(op, OA::DropoutAttrs, where);
      if (t && t->seed()) a.push_back(attr_i("seed", *t->seed()));
      break;
    }
    case OT::EyeLike: {
      const auto* t = table<fb::EyeLikeAttrs>(op, OA::EyeLikeAttrs, where);
      if (t && t->dtype()) a.push_back(attr_i("dtype", onnx_type(*t->dtype(), where)));
      a.push_back(attr_i("k", get(t, &fb::EyeLikeAttrs::k, 0)));
      break;
    }
    case OT::Einsum: {
      const auto* t = table<fb::EinsumAttrs>(op, OA::EinsumAttrs, where);
      if (!t || !t->equation()) throw_user_error(where + ": has no equation");
      a.push_back(attr_s("equation", t->equation()->str()));
      break;
    }
    case OT::Elu: {
      const auto* t = table<fb::EluAttrs>(op, OA::EluAttrs, where);
      a.push_back(attr_f("alpha", get(t, &fb::EluAttrs::alpha, 0.0f)));
      break;
    }
    case OT::Flatten: {
      const auto* t = table<fb::FlattenAttrs>(op, OA::FlattenAttrs, where);
      a.push_back(attr_i("axis", get(t, &fb::FlattenAttrs::axis, 0)));
      break;
    }
    case OT::Gather:
    case OT::GatherElements: {
      const auto* t = table<fb::GatherAttrs>(op, OA::GatherAttrs, where);
      a.push_back(attr_i("axis", get(t, &fb::GatherAttrs::axis, 0)));
      break;
    }
    case OT::GatherND: {
      const auto* t = table<fb::GatherNDAttrs>(op, OA::GatherNDAttrs, where);
      a.push_back(attr_i("batch_dims", get(t, &fb::GatherNDAttrs::batch_dims, 0)));
      break;
    }
    case OT::Gelu: {
      const auto* t = table<fb::GeluAttrs>(op, OA::GeluAttrs, where);
      if (get(t, &fb::GeluAttrs::approximate, fb::GeluApproximation::None) ==
          fb::GeluApproximation::Tanh)
        a.push_back(attr_s("approximate", "tanh"));
      break;
    }
    case OT::Gemm: {
      const auto* t = table<fb::GemmAttrs>(op, OA::GemmAttrs, where);
      a.push_back(attr_f("alpha", get(t, &fb::GemmAttrs::alpha, 0.0f)));
      a.push_back(attr_f("beta", get(t, &fb::GemmAttrs::beta, 0.0f)));
      a.push_back(attr_i("transA", get(t, &fb::GemmAttrs::transpose_a, false)));
      a.push_back(attr_i("transB", get(t, &fb::GemmAttrs::transpose_b, false)));
      break;
    }
    case OT::GridSample: {
      const auto* t = table<fb::GridSampleAttrs>(op, OA::GridSampleAttrs, where);
      a.push_back(attr_i("align_corners", get(t, &fb::GridSampleAttrs::align_corners, false)));
      break;
    }
    case OT::GRU: {
      const auto* t = table<fb::GRUAttrs>(op, OA::GRUAttrs, where);
      a.push_back(attr_s(
          "direction", rnn_direction(get(t, &fb::GRUAttrs::direction, fb::RNNDirection::Forward))));
      a.push_back(attr_i("hidden_size", get(t, &fb::GRUAttrs::hidden_size, 0u)));
      a.push_back(attr_i("linear_before_reset", get(t, &fb::GRUAttrs::linear_before_reset, false)));
      break;
    }
    case OT::LSTM: {
      const auto* t = table<fb::LSTMAttrs>(op, OA::LSTMAttrs, where);
      a.push_back(attr_s("direction", rnn_direction(get(t, &fb::LSTMAttrs::direction,
                                                        fb::RNNDirection::Forward))));
      a.push_back(attr_i("hidden_size", get(t, &fb::LSTMAttrs::hidden_size, 0u)));
      break;
    }
    case OT::HardSigmoid: {
      const auto* t = table<fb::HardSigmoidAttrs>(op, OA::HardSigmoidAttrs, where);
      a.push_back(attr_f("alpha", get(t, &fb::HardSigmoidAttrs::alpha, 0.0f)));
      a.push_back(attr_f("beta", get(t, &fb::HardSigmoidAttrs::beta, 0.0f)));
      break;
    }
    case OT::If: {
      const auto* t = table<fb::IfAttrs>(op, OA::IfAttrs, where);
      p.subgraphs = {{"then_branch", t ? t->then_branch() : nullptr},
                     {"else_branch", t ? t->else_branch() : nullptr}};
      p.bool_inputs = {0};
      break;
    }
    case OT::Loop: {
      const auto* t = table<fb::LoopAttrs>(op, OA::LoopAttrs, where);
      p.subgraphs = {{"body", t ? t->body() : nullptr}};
      break;
    }
    case OT::LayerNormalization: {
      const auto* t = table<fb::LayerNormalizationAttrs>(op, OA::LayerNormalizationAttrs, where);
      a.push_back(attr_i("axis", get(t, &fb::LayerNormalizationAttrs::axis, 0)));
      a.push_back(attr_f("epsilon", get(t, &fb::LayerNormalizationAttrs::epsilon, 0.0f)));
      break;
    }
    case OT::LeakyRelu: {
      const auto* t = table<fb::LeakyReluAttrs>(op, OA::LeakyReluAttrs, where);
      a.push_back(attr_f("alpha", get(t, &fb::LeakyReluAttrs::alpha, 0.0f)));
      break;
    }
    case OT::Mod: {
      const auto* t = table<fb::ModAttrs>(op, OA::ModAttrs, where);
      a.push_back(attr_i("fmod", get(t, &fb::ModAttrs::fmod, false)));
      break;
    }
    case OT::NonMaxSuppression: {
      const auto* t = table<fb::NonMaxSuppressionAttrs>(op, OA::NonMaxSuppressionAttrs, where);
      a.push_back(attr_i("center_point_box", get(t, &fb::NonMaxSuppressionAttrs::box_order,
                                                 fb::NMSBoxOrder::TopLeftBottomRight) ==
                                                 fb::NMSBoxOrder::CenterWidthHeight));
      p.int32_outputs = {0};
      break;
    }
    case OT::OneHot: {
      const auto* t = table<fb::OneHotAttrs>(op, OA::OneHotAttrs, where);
      a.push_back(attr_i("axis", get(t, &fb::OneHotAttrs::axis, 0)));
      break;
    }
    case OT::Pad: {
      const auto* t = table<fb::PadAttrs>(op, OA::PadAttrs, where);
      static const char* kModes[] = {"constant", "reflect", "edge", "wrap"};
      auto mode = static_cast<size_t>(get(t, &fb::PadAttrs::mode, fb::PadMode::Constant));
      if (mode >= 4) throw_user_error(fmt::format("{}: pad mode {} is unknown", where, mode));
      a.push_back(attr_s("mode", kModes[mode]));
      break;
    }
    case OT::DequantizeLinear: {
      const auto* t = table<fb::DequantizeLinearAttrs>(op, OA::DequantizeLinearAttrs, where);
      a.push_back(attr_i("axis", get(t, &fb::DequantizeLinearAttrs::axis, 0)));
      break;
    }
    case OT::QuantizeLinear: {
      const auto* t = table<fb::QuantizeLinearAttrs>(op, OA::QuantizeLinearAttrs, where);
      a.push_back(attr_i("axis", get(t, &fb::QuantizeLinearAttrs::axis, 0)));
      if (t && t->output_dtype())
        a.push_back(attr_i("output_dtype", onnx_type(*t->output_dtype(), where)));
      break;
    }
    case OT::ReduceMean:
    case OT::ReduceL2:
    case OT::ReduceProd:
    case OT::ReduceSum:
    case OT::ReduceMin:
    case OT::ReduceMax:
    case OT::ReduceSumSquare: {
      const auto* t = table<fb::ReduceMeanAttrs>(op, OA::ReduceMeanAttrs, where);
      a.push_back(attr_i("keepdims", get(t, &fb::ReduceMeanAttrs::keep_dims, false)));
      a.push_back(attr_i("noop_with_empty_axes",
                         get(t, &fb::ReduceMeanAttrs::noop_with_empty_axes, false)));
      p.axes_to_input = true;
      if (t && t->axes())
        for (int32_t x : *t->axes()) p.axes.push_back(x);
      break;
    }
    case OT::Reshape: {
      const auto* t = table<fb::ReshapeAttrs>(op, OA::ReshapeAttrs, where);
      a.push_back(attr_i("allowzero", get(t, &fb::ReshapeAttrs::allow_zero, false)));
      break;
    }
    case OT::Resize: {
      const auto* t = table<fb::ResizeAttrs>(op, OA::ResizeAttrs, where);
      static const char* kCoord[] = {"half_pixel", "asymmetric", "align_corners",
                                     "pytorch_half_pixel"};
      static const char* kNearest[] = {"floor", "ceil", "round_prefer_floor", "round_prefer_ceil"};
      auto mode = get(t, &fb::ResizeAttrs::mode, fb::ResizeMode::Nearest);
      auto coord = static_cast<size_t>(
          get(t, &fb::ResizeAttrs::coord_mode, fb::CoordTransformMode::HalfPixel));
      auto nearest =
          static_cast<size_t>(get(t, &fb::ResizeAttrs::nearest_mode, fb::NearestMode::Floor));
      if (coord >= 4 || nearest >= 4 || static_cast<int>(mode) > 1)
        throw_user_error(where + ": has a resize mode rten does not define");
      a.push_back(attr_s("mode", mode == fb::ResizeMode::Linear ? "linear" : "nearest"));
      a.push_back(attr_s("coordinate_transformation_mode", kCoord[coord]));
      a.push_back(attr_s("nearest_mode", kNearest[nearest]));
      break;
    }
    case OT::ScatterElements: {
      const auto* t = table<fb::ScatterElementsAttrs>(op, OA::ScatterElementsAttrs, where);
      a.push_back(attr_i("axis", get(t, &fb::ScatterElementsAttrs::axis, 0)));
      a.push_back(attr_s("reduction", scatter_reduction(get(t, &fb::ScatterElementsAttrs::reduction,
                                                            fb::ScatterReduction::None))));
      break;
    }
    case OT::ScatterND: {
      const auto* t = table<fb::ScatterNDAttrs>(op, OA::ScatterNDAttrs, where);
      a.push_back(attr_s("reduction", scatter_reduction(get(t, &fb::ScatterNDAttrs::reduction,
                                                            fb::ScatterReduction::None))));
      break;
    }
    case OT::Shape: {
      const auto* t = table<fb::ShapeAttrs>(op, OA::ShapeAttrs, where);
      if (t && t->start()) a.push_back(attr_i("start", *t->start()));
      if (t && t->end()) a.push_back(attr_i("end", *t->end()));
      p.int32_outputs = {0};
      break;
    }
    case OT::Softmax:
    case OT::LogSoftmax: {
      const auto* t = table<fb::SoftmaxAttrs>(op, OA::SoftmaxAttrs, where);
      a.push_back(attr_i("axis", get(t, &fb::SoftmaxAttrs::axis, 0)));
      break;
    }
    case OT::Split: {
      const auto* t = table<fb::SplitAttrs>(op, OA::SplitAttrs, where);
      a.push_back(attr_i("axis", get(t, &fb::SplitAttrs::axis, 0)));
      if (t && t->num_outputs()) a.push_back(attr_i("num_outputs", *t->num_outputs()));
      break;
    }
    case OT::STFT: {
      const auto* t = table<fb::STFTAttrs>(op, OA::STFTAttrs, where);
      a.push_back(attr_i("onesided", get(t, &fb::STFTAttrs::onesided, true)));
      break;
    }
    case OT::TopK: {
      const auto* t = table<fb::TopKAttrs>(op, OA::TopKAttrs, where);
      a.push_back(attr_i("axis", get(t, &fb::TopKAttrs::axis, 0)));
      a.push_back(attr_i("largest", get(t, &fb::TopKAttrs::largest, false)));
      a.push_back(attr_i("sorted", get(t, &fb::TopKAttrs::sorted, false)));
      p.int32_outputs = {1};
      break;
    }
    case OT::Transpose: {
      const auto* t = table<fb::TransposeAttrs>(op, OA::TransposeAttrs, where);
      if (t && t->perm() && t->perm()->size()) a.push_back(attr_ints("perm", t->perm()));
      break;
    }
    case OT::Trilu: {
      const auto* t = table<fb::TriluAttrs>(op, OA::TriluAttrs, where);
      a.push_back(attr_i("upper", get(t, &fb::TriluAttrs::upper, false)));
      break;
    }
    case OT::Equal:
    case OT::Less:
    case OT::LessOrEqual:
    case OT::Greater:
    case OT::GreaterOrEqual:
    case OT::IsNaN:
    case OT::IsInf:
      p.int32_outputs = {0};
      break;
    case OT::Not:
      p.bool_inputs = {0};
      p.int32_outputs = {0};
      break;
    case OT::And:
    case OT::Or:
    case OT::Xor:
      p.bool_inputs = {0, 1};
      p.int32_outputs = {0};
      break;
    case OT::Where:
      p.bool_inputs = {0};
      break;
    case OT::Size:
    case OT::NonZero:
      p.int32_outputs = {0};
      break;
    case OT::RandomUniform:
    case OT::RandomUniformLike:
    case OT::RandomNormal:
    case OT::RandomNormalLike:
    case OT::SequenceEmpty:
    case OT::ConcatFromSequence:
    case OT::SplitToSequence:
      // rlx has no random or sequence values: the ONNX table refuses these by name.
      break;
    default:
      // Operators without attributes (Add, Relu, MatMul, Slice, ...). One that carries a table
      // anyway is malformed.
      if (op.attrs_type() != OA::NONE && op.type() != OT::CastLike && op.type() != OT::IsInf)
        throw_user_error(fmt::format("{}: carries {} attributes, but this operator takes none",
                                     where, static_cast<int>(op.attrs_type())));
      break;
  }
  return p;
}

}  // namespace rlx::rten
