#include "errors.h"

#include <fmt/format.h>

#include <cstdio>
#include <new>
#include <string>

#include "rlx/core/error.h"

namespace rlx::cli {
namespace {

constexpr const char* kBugHint =
    "this is a bug in rlx; please report it with the command and the output of --verbose";

void print(const std::string& what, const std::string& hint) {
  std::string out = "rlx: error: " + what;
  if (out.back() != '\n') out += '\n';
  if (!hint.empty()) out += "hint: " + hint + "\n";
  std::fputs(out.c_str(), stderr);
}

// What the user can do about each kind of library error; the message already says what and why.
std::string hint_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kCompile:  // core's CompileError ends in its own "what to do"
      break;
    case ErrorKind::kUnsupported:
      return "choose another target with --target, or see `rlx --list-targets -v` for what each "
             "target covers";
    case ErrorKind::kDevice:
      return "the device or its driver failed; `rlx --list-targets -v` shows the target's device "
             "and status";
    case ErrorKind::kPlugin:
      return "the plugin failed; check it with `rlx --list-targets -v`, reinstall it, or report "
             "the command and this message to its authors";
    case ErrorKind::kInternal:
      return kBugHint;
    case ErrorKind::kUser:
      break;
  }
  return {};
}

}  // namespace

std::string usage_hint(std::string_view command) {
  if (command.empty()) return "run `rlx --help` to see the commands";
  return fmt::format("run `rlx {} --help` to see its usage", command);
}

void print_warning(const std::string& what) {
  std::fputs(("rlx: warning: " + what + "\n").c_str(), stderr);
}

void print_note(const std::string& what) {
  std::fputs(("rlx: note: " + what + "\n").c_str(), stderr);
}

int report_exception(std::exception_ptr error, bool verbose) {
  try {
    std::rethrow_exception(error);
  } catch (const CliError& e) {
    print(e.what(), e.hint());
    return kExitUser;
  } catch (const Error& e) {
    const bool internal = e.kind() == ErrorKind::kInternal;
    std::string what = e.what();
    print(internal ? "internal error: " + what : what, hint_for(e.kind()));
    if (verbose) std::fprintf(stderr, "rlx: note: raised at %s\n", e.where_string().c_str());
    // A plugin's unclassified failure is a bug there (its message already names the plugin), not
    // something wrong with the user's input.
    return internal || e.kind() == ErrorKind::kPlugin ? kExitInternal : kExitUser;
  } catch (const std::bad_alloc&) {
    print("out of memory", "try a smaller model or input, or free memory on this machine");
    return kExitInternal;
  } catch (const std::exception& e) {
    print(std::string("internal error: ") + e.what(), kBugHint);
    return kExitInternal;
  } catch (...) {
    print("internal error: an unknown exception", kBugHint);
    return kExitInternal;
  }
}

}  // namespace rlx::cli
