// Outputs that may be written into their input's memory (a KV cache updated in place).
//
// A decoder's step reads a cache, writes one row into a copy of it (scatter) and returns the
// copy; fed back as the next step's input, the copy costs the whole cache every step (at 1024
// slots, a third of a Gemma 3 270M step on cpu). When the program proves that an output is made
// by one scatter from a graph input that nothing else reads, the caller may pass the same memory
// for both: the scatter then writes its rows where they are, and a target's scatter kernel skips
// the copy of its operand onto itself (docs/plugin-authors.md, "In-place updates"). An output
// made by one AllReduce or Broadcast of such an input may share its memory the same way (the
// exchange then runs on the caller's buffer, as Gloo's own in-place call does).
#pragma once
#include <cstdint>
#include <map>

#include "rlx/core/lir.h"

namespace rlx {

// Output buffer id -> the input buffer id whose memory it may share.
std::map<int32_t, int32_t> in_place_updates(const lir::Program& p);

}  // namespace rlx
