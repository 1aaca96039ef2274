// The split-complex rewrite (rewrite_complex.cpp), registered in dispatch_rewrites.cpp.
#pragma once
#include "rlx/core/dispatch.h"

namespace rlx {

Rewrite split_complex();

}  // namespace rlx
