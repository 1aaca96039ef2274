// The tools around a Hexagon program: clang with its Hexagon backend and lld (to build it) and,
// for tests only, an emulator named by RLX_HEXAGON_EMULATOR (qemu-hexagon, qemu-user) to run it.
// Running on a real DSP needs FastRPC and the Hexagon SDK, which this target does not drive.
#pragma once
#include <filesystem>
#include <string>

namespace rlx::hexagon {

// The clang that builds Hexagon programs: $RLX_HEXAGON_CLANG, else clang-14 or clang on PATH,
// checked for a hexagon backend and for ld.lld beside it (found once). "" with `why` set.
std::string hexagon_clang(std::string* why);

// $RLX_HEXAGON_EMULATOR when it names an executable file; "" with `why` set otherwise.
std::string hexagon_emulator(std::string* why);

// The command that builds kElfFile from the sources write_program wrote (run in their folder).
std::string build_command(const std::string& clang);

// Builds the program in `dir`; throws rlx::Error (kCompile) with clang's messages.
void build_program(const std::string& clang, const std::filesystem::path& dir);

// Runs `dir`/kElfFile under `emulator` with `dir` as its working folder; throws rlx::Error
// (kDevice) with the exit status's meaning and the emulator's output when it fails.
void run_program(const std::string& emulator, const std::filesystem::path& dir);

}  // namespace rlx::hexagon
