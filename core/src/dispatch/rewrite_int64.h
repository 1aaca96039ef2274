// The split-i64 rewrite (rewrite_int64.cpp), registered in dispatch_rewrites.cpp.
#pragma once
#include "rlx/core/dispatch.h"

namespace rlx {

Rewrite split_int64();

}  // namespace rlx
