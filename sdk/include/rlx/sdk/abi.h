// The ABI handshake. Every plugin exports the C function rlx_plugin_abi(); the registry calls it
// before touching any C++ symbol. Major must equal the host's; the host's minor must be >= the
// plugin's; the toolchain tag must match because C++ types cross the boundary.
//
// Minor history (a host calls what a plugin's minor has, never more):
//   1.0  the first boundary
//   1.1  ImporterBoundary::load_with_options (ImportOptions: input values, dim sizes, input
//        shapes)
//   2.0  contract 2.0: Status with a kind (user, unsupported, device, internal); device-resident
//        buffers, queues and events (DeviceBoundary); executables bound to host or device
//        buffers; compile_mir/emit_mir for targets that take the MIR graph; Channel for
//        collectives; named, versioned extensions; the plugin version from the build; one
//        importer entry point, load(path, options). A 1.x plugin is refused.
//   2.1  ImporterBoundary::read_inputs: input tensors stored in the format's own files (ONNX
//        test data's input_N.pb), so the host needs no reader of that format
//   2.2  ImportOptions::tensor_parallel: the shard an importer builds for `--tp`; one that
//        cannot shard leaves Model::metadata["tensor_parallel"] unset and the host refuses
//   2.3  ImportOptions::pipeline_parallel: the stage an importer builds for `--pp` (appended, so
//        a 2.2 importer reads the options it knows; it leaves "pipeline_parallel" unset)
#pragma once
#include <cstdint>

// CMake reads these two lines (cmake/RlxCommon.cmake): keep each a plain number.
#define RLX_ABI_MAJOR 2
#define RLX_ABI_MINOR 3

#define RLX_STR2(x) #x
#define RLX_STR(x) RLX_STR2(x)
#if defined(__clang__)
#define RLX_TOOLCHAIN_COMPILER "clang"
#elif defined(__GNUC__)
#define RLX_TOOLCHAIN_COMPILER "gcc"
#else
#define RLX_TOOLCHAIN_COMPILER "unknown"
#endif
#if defined(_GLIBCXX_USE_CXX11_ABI) && _GLIBCXX_USE_CXX11_ABI
#define RLX_TOOLCHAIN_STDLIB "libstdc++-cxx11"
#elif defined(_LIBCPP_VERSION)
#define RLX_TOOLCHAIN_STDLIB "libc++"
#else
#define RLX_TOOLCHAIN_STDLIB "libstdc++"
#endif
// Compilers of one family share an ABI across versions, so the tag names family and library.
#define RLX_TOOLCHAIN_TAG RLX_TOOLCHAIN_COMPILER "/" RLX_TOOLCHAIN_STDLIB

#define RLX_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" {
struct RlxPluginAbi {
  uint32_t major;
  uint32_t minor;
  const char* toolchain;  // RLX_TOOLCHAIN_TAG at the plugin's build
  const char* kind;       // "target" or "importer"
};
}

// The names the registry looks up.
#define RLX_ABI_SYMBOL "rlx_plugin_abi"
#define RLX_FACTORY_SYMBOL "rlx_plugin_factory"
