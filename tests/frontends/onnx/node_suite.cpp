#include "node_suite.h"

#include <onnx/onnx_pb.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "rlx/core/frozen_inputs.h"
#include "rlx/core/runtime.h"
#include "rlx/onnx/import.h"

namespace rlx::onnx_test {

namespace fs = std::filesystem;

namespace {

std::string first_line(const std::string& s, size_t max = 300) {
  std::string l = s.substr(0, s.find('\n'));
  return l.size() > max ? l.substr(0, max) + "..." : l;
}

std::string snake(const std::string& op) {
  std::string out;
  for (size_t i = 0; i < op.size(); ++i) {
    char c = op[i];
    bool upper = std::isupper(static_cast<unsigned char>(c));
    if (upper && i > 0 &&
        (std::islower(static_cast<unsigned char>(op[i - 1])) ||
         (i + 1 < op.size() && std::islower(static_cast<unsigned char>(op[i + 1])))))
      out += '_';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// The op a case is about: the one whose snake_case name starts the test name, else the first
// op that is not a Constant.
std::string main_op(const ::onnx::ModelProto& m, const std::string& test) {
  std::string rest = test.rfind("test_", 0) == 0 ? test.substr(5) : test;
  std::string best, first;
  for (const auto& n : m.graph().node()) {
    if (first.empty() && n.op_type() != "Constant") first = n.op_type();
    std::string s = snake(n.op_type());
    if (rest.rfind(s, 0) == 0 && s.size() > snake(best).size()) best = n.op_type();
  }
  return !best.empty() ? best : !first.empty() ? first : "Constant";
}

std::string op_in_message(const std::string& msg) {
  static const std::regex re(R"(node [^\n]*? \(([A-Za-z][A-Za-z0-9_.]*)\): )");
  std::string op;
  for (auto it = std::sregex_iterator(msg.begin(), msg.end(), re); it != std::sregex_iterator();
       ++it)
    op = (*it)[1];
  return op;
}

bool plain_tensors(const ::onnx::GraphProto& g) {
  for (const auto& v : g.input())
    if (!v.type().has_tensor_type()) return false;
  for (const auto& v : g.output())
    if (!v.type().has_tensor_type()) return false;
  return true;
}

std::string compare(const Tensor& got, const Tensor& want, Tolerance tol) {
  if (got.dtype() != want.dtype())
    return "dtype " + std::string(dtype_name(got.dtype())) + ", expected " +
           std::string(dtype_name(want.dtype()));
  if (got.shape() != want.shape())
    return "shape " + got.shape_str() + ", expected " + want.shape_str();
  bool fl = is_float(got.dtype());
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = got.scalar_at(i), e = want.scalar_at(i);
    bool ok;
    if (!fl) {
      ok = got.dtype() == DType::kI64 ? got.as<int64_t>()[i] == want.as<int64_t>()[i] : a == e;
    } else if (std::isnan(e) || std::isnan(a)) {
      ok = std::isnan(e) && std::isnan(a);
    } else if (std::isinf(e) || std::isinf(a)) {
      ok = a == e;
    } else {
      ok = std::fabs(a - e) <= tol.atol + tol.rtol * std::fabs(e);
    }
    if (!ok) {
      std::ostringstream s;
      s.precision(9);
      s << "element " << i << " is " << a << ", expected " << e;
      return s.str();
    }
  }
  return {};
}

}  // namespace

CaseResult run_case(const fs::path& dir, const std::shared_ptr<Target>& target, Tolerance tol) {
  CaseResult r;
  r.name = dir.filename().string();
  const fs::path model_path = dir / "model.onnx";
  ::onnx::ModelProto proto;
  {
    std::ifstream f(model_path, std::ios::binary);
    if (!proto.ParseFromIstream(&f)) {
      r.stage = "data", r.message = "model.onnx does not parse", r.op = "?";
      return r;
    }
  }
  r.op = main_op(proto, r.name);
  if (!plain_tensors(proto.graph())) {
    r.status = CaseResult::Status::kNotPlain;
    return r;
  }
  std::vector<std::string> output_names;
  for (const auto& v : proto.graph().output()) output_names.push_back(v.name());

  NamedTensors inputs;
  std::vector<Tensor> expected;
  const fs::path data = dir / "test_data_set_0";
  try {
    for (auto& [name, t] : onnx::read_test_data_inputs(model_path, data)) inputs[name] = t;
    for (size_t i = 0; i < output_names.size(); ++i)
      expected.push_back(
          onnx::read_tensor_file(data / ("output_" + std::to_string(i) + ".pb")).second);
  } catch (const std::exception& e) {
    r.stage = "data", r.message = first_line(e.what());
    return r;
  }

  Model model;
  onnx::ImportOptions options;
  r.stage = "import";
  try {
    // The importer freezes the offered inputs a node needs at compile time (a Reshape's shape,
    // ...) and lists them; the rest stay run-time inputs.
    options.input_values = inputs;
    model = onnx::import_file(model_path, options);
    auto frozen = model.metadata.find(kFrozenInputsKey);
    if (frozen != model.metadata.end())
      for (const std::string& name : split_frozen_inputs(frozen->second)) {
        inputs.erase(name);
        r.specialised = true;
      }
    r.stage = "compile";
    Session session(target);
    CompiledModel compiled = session.compile(model.graph());
    r.stage = "run";
    NamedTensors outputs = compiled.run(inputs);
    r.stage = "compare";
    for (size_t i = 0; i < output_names.size(); ++i) {
      auto it = outputs.find(output_names[i]);
      if (it == outputs.end()) {
        r.message = "output '" + output_names[i] + "' is missing";
        return r;
      }
      std::string diff = compare(it->second, expected[i], tol);
      if (!diff.empty()) {
        r.message = "output '" + output_names[i] + "': " + diff;
        return r;
      }
    }
    r.status = CaseResult::Status::kPass;
    r.stage.clear();
  } catch (const std::exception& e) {
    r.message = first_line(e.what());
    if (r.stage == "import") {
      std::string op = op_in_message(e.what());
      if (!op.empty()) r.op = op;
    }
  }
  return r;
}

}  // namespace rlx::onnx_test
