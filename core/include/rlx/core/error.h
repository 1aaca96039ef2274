// One error type for the whole project. Libraries throw; the plugin boundary and the CLI
// convert to messages. Every error carries the source location where it was raised so an
// internal error can be traced without a debugger.
#pragma once
#include <stdexcept>
#include <string>

namespace rlx {

// Where an error was raised. SourceLocation would do, but clang 14 (used for the fuzz
// builds) cannot compile libstdc++'s; the builtins below work in gcc and clang alike.
struct SourceLocation {
  const char* file = "";
  unsigned line_number = 0;
  static constexpr SourceLocation current(const char* f = __builtin_FILE(),
                                          unsigned l = __builtin_LINE()) {
    return {f, l};
  }
  const char* file_name() const { return file; }
  unsigned line() const { return line_number; }
};

enum class ErrorKind {
  kUser,      // bad input: unreadable file, wrong tensor, malformed IR text
  kCompile,   // the graph cannot be compiled for the chosen target (dispatch refusal); the
              // message carries its own "what to do"
  kUnsupported,  // the target or its device cannot do what was asked (no f64, codegen-only)
  kDevice,       // the device or its driver failed at run time (lost device, out of memory)
  kPlugin,    // a plugin failed in a way it did not classify (a bug or a broken install)
  kInternal,  // a bug in rlx
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message,
        SourceLocation where = SourceLocation::current());
  ErrorKind kind() const { return kind_; }
  const SourceLocation& where() const { return where_; }
  // "file:line" of the raise site, for --verbose diagnostics.
  std::string where_string() const;

 private:
  ErrorKind kind_;
  SourceLocation where_;
};

// Raised when no lowering path is legal for a node; the message names node, op, dtypes,
// target and each path's refusal.
class CompileError : public Error {
 public:
  explicit CompileError(std::string message,
                        SourceLocation where = SourceLocation::current())
      : Error(ErrorKind::kCompile, std::move(message), where) {}
};

[[noreturn]] void throw_user_error(std::string message,
                                   SourceLocation where = SourceLocation::current());
[[noreturn]] void throw_unsupported(std::string message,
                                    SourceLocation where = SourceLocation::current());
[[noreturn]] void throw_device_error(std::string message,
                                     SourceLocation where = SourceLocation::current());
[[noreturn]] void throw_internal_error(
    std::string message, SourceLocation where = SourceLocation::current());
// The user error of a gather or scatter index outside its axis, worded alike on every target
// (the tests of each compare the text): "<op>: index V (at position P of the indices) is out of
// range for an axis of size N".
[[noreturn]] void throw_index_error(const std::string& op, int64_t index, int64_t position,
                                    int64_t axis_size,
                                    SourceLocation where = SourceLocation::current());

// Invariant check that stays on in release builds: a failed check is an rlx bug.
#define RLX_CHECK(cond, msg)                                                    \
  do {                                                                          \
    if (!(cond)) ::rlx::throw_internal_error(std::string("check failed: ") + #cond + ": " + (msg)); \
  } while (0)

}  // namespace rlx
