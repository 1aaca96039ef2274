// The "rlx.deployable" extension, version 1 (Target::extension): what a target tells the loader
// of a compiled folder (`rlx compile -o DIR`, then `rlx run DIR`) about the artifacts its emit()
// wrote there. A target without it is loaded from the folder's LIR alone (compiled again from
// LIR, which must then be quick), and its manifest records no machine requirements.
//
// An extension is not guarded like the boundary (sdk/boundary.h): these functions are C-like,
// catch everything inside the plugin, and report failure as a message. A returned string stays
// valid until the next call of the same function on the same thread.
#pragma once
#include <cstdint>

namespace rlx::sdk {

inline constexpr const char* kDeployableExtension = "rlx.deployable";
inline constexpr uint32_t kDeployableVersion = 1;

extern "C" {
struct RlxDeployableV1 {
  // What the artifacts in `dir` need of the machine that runs them, as a JSON object of strings
  // (cpu: {"arch": "x86_64", "isa": "x86-64-v4"}); "{}" when nothing. The loader records it in
  // the manifest's "requires" and hands it back to check() on the machine that loads it.
  const char* (*requirements)(const char* dir);
  // nullptr when this machine meets `requirements_json` (what requirements() returned where the
  // folder was compiled); otherwise why not, in words a user can act on.
  const char* (*check)(const char* requirements_json);
  // Makes the prebuilt code in `dir` available to later compile() calls of the programs it was
  // built for (cpu: its kernels' shared objects, so no C compiler runs). nullptr on success,
  // otherwise why the folder's code cannot be used. Prebuilt code is keyed by what it was built
  // from, so a program it does not fit is compiled as usual, never given the wrong code.
  const char* (*use_prebuilt)(const char* dir);
};
}

}  // namespace rlx::sdk
