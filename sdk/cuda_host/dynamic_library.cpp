#include "dynamic_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace rlx::cuda {

void* open_first_library(const std::vector<std::string>& names, std::string* tried) {
  std::string all;
  for (const std::string& name : names) {
    if (void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
    all += (all.empty() ? "" : ", ") + name;
  }
  if (tried) *tried = all;
  return nullptr;
}

void* SymbolResolver::symbol(const char* name) {
  void* fn = dlsym(library_, name);
  if (!fn) error_ = fmt::format(fmt::runtime(missing_format_), name);
  return fn;
}

std::string tidy_compiler_log(std::string log) {
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (log.size() > 4000) log = log.substr(0, 4000) + "\n...";
  return log;
}

}  // namespace rlx::cuda
