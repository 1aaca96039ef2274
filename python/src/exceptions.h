// rlx's errors as Python exceptions: each kind the CLI reports (usage, user, compile, ...) is a
// class of rlx.errors, raised with the message and hint the CLI would print and the node the
// message names.
#pragma once
#include <nanobind/nanobind.h>

namespace rlx::python {

void register_error_translator();

}  // namespace rlx::python
