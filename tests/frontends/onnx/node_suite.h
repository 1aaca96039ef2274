// Runs one case of ONNX's backend node test suite (test_*/model.onnx + test_data_set_0) on a
// target and compares with the expected outputs like onnx.backend.test does.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "rlx/core/target.h"

namespace rlx::onnx_test {

struct CaseResult {
  enum class Status { kPass, kFail, kNotPlain };
  std::string name;
  Status status = Status::kFail;
  std::string op;            // the operator a failure is attributed to
  std::string stage;         // "import", "compile", "run", "compare", "data"
  std::string message;       // first line of the error or mismatch
  bool specialised = false;  // inputs were bound at import (ImportOptions::input_values)
};

// Tolerance of onnx.backend.test's default: |actual - expected| <= atol + rtol * |expected|.
struct Tolerance {
  double rtol = 1e-3, atol = 1e-7;
};

CaseResult run_case(const std::filesystem::path& dir, const std::shared_ptr<Target>& target,
                    Tolerance tol = {});

}  // namespace rlx::onnx_test
