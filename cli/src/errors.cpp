#include "errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <new>
#include <string>

#include "rlx/core/error.h"
#include "rlx/core/json.h"

namespace rlx::cli {
namespace {

constexpr const char* kBugHint =
    "this is a bug in rlx; please report it with the command and the output of --verbose";

// The graph node an error names ("node %q (dot_general)" in dispatch and verifier messages), or
// "" when it names none.
std::string node_named_in(const std::string& what) {
  const size_t at = what.find("node %");
  if (at == std::string::npos) return {};
  const size_t end = what.find_first_of(" :,)\n", at + 5);
  return what.substr(at + 5, end == std::string::npos ? std::string::npos : end - (at + 5));
}

// One error: "rlx: error: <what>" and "hint: <what to do>" lines, or with --json one line of
// {"error": {"kind", "message", "node", "hint"}} for tools ("node" only where one is named).
void print(const std::string& kind, const std::string& what, const std::string& hint, bool json) {
  if (json) {
    std::string message = what;
    while (!message.empty() && message.back() == '\n') message.pop_back();
    std::string line = fmt::format("{{\"error\": {{\"kind\": {}, \"message\": {}",
                                   json::json_quote(kind), json::json_quote(message));
    if (std::string node = node_named_in(message); !node.empty())
      line += fmt::format(", \"node\": {}", json::json_quote(node));
    if (!hint.empty()) line += fmt::format(", \"hint\": {}", json::json_quote(hint));
    std::fputs((line + "}}\n").c_str(), stderr);
    return;
  }
  std::string out = "rlx: error: " + what;
  if (out.back() != '\n') out += '\n';
  if (!hint.empty()) out += "hint: " + hint + "\n";
  std::fputs(out.c_str(), stderr);
}

const char* kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUser:
      return "user";
    case ErrorKind::kCompile:
      return "compile";
    case ErrorKind::kUnsupported:
      return "unsupported";
    case ErrorKind::kDevice:
      return "device";
    case ErrorKind::kPlugin:
      return "plugin";
    case ErrorKind::kInternal:
      break;
  }
  return "internal";
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

ErrorRecord describe_exception(std::exception_ptr error) {
  ErrorRecord r;
  try {
    std::rethrow_exception(error);
  } catch (const UsageError& e) {
    r = {"usage", e.what(), "", e.hint(), "", kExitUser};
  } catch (const CliError& e) {
    r = {"user", e.what(), "", e.hint(), "", kExitUser};
  } catch (const Error& e) {
    const bool internal = e.kind() == ErrorKind::kInternal;
    // A plugin's unclassified failure is a bug there (its message already names the plugin), not
    // something wrong with the user's input.
    r = {kind_name(e.kind()),
         e.what(),
         "",
         hint_for(e.kind()),
         e.where_string(),
         internal || e.kind() == ErrorKind::kPlugin ? kExitInternal : kExitUser};
  } catch (const std::bad_alloc&) {
    r = {"out_of_memory",
         "out of memory",
         "",
         "try a smaller model or input, or free memory on this machine",
         "",
         kExitInternal};
  } catch (const std::exception& e) {
    r = {"internal", e.what(), "", kBugHint, "", kExitInternal};
  } catch (...) {
    r = {"internal", "an unknown exception", "", kBugHint, "", kExitInternal};
  }
  while (!r.message.empty() && r.message.back() == '\n') r.message.pop_back();
  r.node = node_named_in(r.message);
  return r;
}

int report_exception(std::exception_ptr error, bool verbose, bool json) {
  const ErrorRecord r = describe_exception(error);
  const bool internal = r.kind == "internal";
  print(r.kind, internal && !json ? "internal error: " + r.message : r.message, r.hint, json);
  if (verbose && !json && !r.where.empty())
    std::fprintf(stderr, "rlx: note: raised at %s\n", r.where.c_str());
  return r.exit_code;
}

}  // namespace rlx::cli
