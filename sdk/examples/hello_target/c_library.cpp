#include "c_library.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include "rlx/core/error.h"

namespace hello {
namespace fs = std::filesystem;

std::optional<std::string> find_c_compiler() {
  std::vector<std::string> names;
  if (const char* cc = std::getenv("CC"); cc && *cc) names.push_back(cc);
  names.insert(names.end(), {"cc", "gcc", "clang"});
  for (const std::string& name : names)
    if (std::system(("command -v '" + name + "' >/dev/null 2>&1").c_str()) == 0) return name;
  return std::nullopt;
}

CLibrary::CLibrary(const std::string& compiler, const std::string& source) {
  std::string dir_template = (fs::temp_directory_path() / "rlx-hello-XXXXXX").string();
  if (!mkdtemp(dir_template.data()))
    throw rlx::Error(rlx::ErrorKind::kDevice, "hello: cannot create a folder under " +
                                                  fs::temp_directory_path().string() + " for its kernels");
  const fs::path dir = dir_template;
  // The library stays mapped after its file is gone, so nothing is left behind on any path out.
  struct RemoveDir {
    fs::path dir;
    ~RemoveDir() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  const fs::path c_file = dir / "kernels.c", so_file = dir / "kernels.so", log = dir / "cc.log";
  std::ofstream(c_file) << source;
  // -O2 without -ffast-math: the renderer's numeric semantics (NaN-propagating max, rounding of
  // f16) must survive the compiler.
  const std::string command = "'" + compiler + "' -O2 -shared -fPIC -o '" + so_file.string() + "' '" +
                              c_file.string() + "' -lm 2>'" + log.string() + "'";
  if (std::system(command.c_str()) != 0) {
    std::stringstream messages;
    messages << std::ifstream(log).rdbuf();
    throw rlx::Error(rlx::ErrorKind::kDevice, "hello: the C compiler '" + compiler +
                                                  "' rejected the generated kernels:\n" + messages.str());
  }
  handle_ = dlopen(so_file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_)
    throw rlx::Error(rlx::ErrorKind::kDevice, std::string("hello: cannot load its compiled kernels: ") + dlerror());
}

CLibrary::~CLibrary() {
  if (handle_) dlclose(handle_);
}

void* CLibrary::symbol(const std::string& name) const {
  void* address = dlsym(handle_, name.c_str());
  if (!address) throw rlx::Error(rlx::ErrorKind::kInternal, "hello: no kernel " + name + " in its compiled library");
  return address;
}

}  // namespace hello
