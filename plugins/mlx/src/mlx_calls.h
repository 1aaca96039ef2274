// One mechanism for both things the mlx target makes of a graph: the executable (MLX arrays built
// and run in this process) and the standalone program `rlx compile --target mlx` writes (C++
// source that makes the same MLX calls). graph_builder.cpp and native_ops.cpp make every
// mlx::core call through MlxCalls (the RLX_MX macro): it runs the call and, when a CallRecorder
// is attached, also writes that very call, with its arguments spelled as C++, as one line of the
// program. The two cannot drift apart: the text is what the builder did, call for call, and an
// array made outside MlxCalls has no name in the text, so writing the program stops at its first
// use (an internal error) instead of writing a program that differs from the executable.
#pragma once
#include <mlx/array.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rlx::mlx_target {

// The text side: C++ names for arrays and the lines that define them.
class CallRecorder {
 public:
  // Names an array the program receives rather than computes (an input, a weight).
  void bind(const mlx::core::array& a, std::string name);
  // Appends `const mlx::core::array vN = callee(args...);` naming `result` vN.
  template <typename... Args>
  void record(const mlx::core::array& result, std::string_view callee, const Args&... args) {
    std::string call(callee);
    call += '(';
    bool first = true;
    ((call += (first ? "" : ", ") + spell(args), first = false), ...);
    call += ')';
    define(result, call);
  }
  // A `// text` line before the next definition (newlines in `text` become spaces).
  void comment(const std::string& text);
  // The C++ name of an array bound or recorded here; an internal error for any other.
  const std::string& name_of(const mlx::core::array& a) const;
  const std::vector<std::string>& lines() const { return lines_; }

  // Each argument as a C++ expression of exactly its type, so that the program's call picks the
  // overload the builder's did.
  std::string spell(const mlx::core::array& a) const;
  std::string spell(const std::optional<mlx::core::array>& a) const;
  std::string spell(const std::vector<mlx::core::array>& v) const;
  std::string spell(std::nullopt_t) const;
  std::string spell(const mlx::core::Shape& s) const;
  std::string spell(const std::vector<int>& v) const;
  std::string spell(const std::vector<std::pair<int, int>>& v) const;
  std::string spell(mlx::core::Dtype d) const;
  std::string spell(bool v) const;
  std::string spell(int v) const;
  std::string spell(int64_t v) const;
  std::string spell(float v) const;
  std::string spell(double v) const;
  std::string spell(const std::string& s) const;
  // A string literal would otherwise convert to bool: pass std::string.
  std::string spell(const char* s) const = delete;

 private:
  void define(const mlx::core::array& result, const std::string& call);

  std::unordered_map<std::uintptr_t, std::string> names_;  // by mlx::core::array::id()
  // Every named array stays alive while the recorder does, so no id is reused for another.
  std::vector<mlx::core::array> kept_;
  std::vector<std::string> lines_;
  size_t defined_ = 0;  // the next definition is v<defined_>
};

// The executable side: runs each call, and records it when writing a program.
class MlxCalls {
 public:
  explicit MlxCalls(CallRecorder* recorder = nullptr) : recorder_(recorder) {}

  template <typename Fn, typename... Args>
  mlx::core::array operator()(std::string_view callee, Fn&& fn, const Args&... args) const {
    mlx::core::array result = fn(args...);
    if (recorder_) recorder_->record(result, callee, args...);
    return result;
  }
  // Whether a program is being written (the builder then refuses what it cannot write).
  bool recording() const { return recorder_ != nullptr; }
  // A comment line in the program (what the next calls compute); nothing when not writing.
  void comment(const std::string& text) const {
    if (recorder_) recorder_->comment(text);
  }

 private:
  CallRecorder* recorder_;
};

// `RLX_MX(calls, fn, args...)` is mlx::core::fn(args...), run and recorded by `calls` as
// "mx::fn(...)": the program's source says `namespace mx = mlx::core;`. Arguments must be values
// CallRecorder::spell takes (write `std::vector<int>{1, 2}`, not `{1, 2}`).
#define RLX_MX(calls, fn, ...) \
  (calls)(                     \
      "mx::" #fn, [&](const auto&... a) { return ::mlx::core::fn(a...); }, __VA_ARGS__)

}  // namespace rlx::mlx_target
