#include "exceptions.h"

#include <nanobind/stl/string.h>

#include <new>

#include "errors.h"  // the CLI's: describe_exception
#include "rlx/core/error.h"

namespace rlx::python {
namespace nb = nanobind;

void register_error_translator() {
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    // Only rlx's own errors and out-of-memory are translated; anything else (nanobind's own
    // exceptions among them) goes on to nanobind's translators.
    try {
      std::rethrow_exception(error);
    } catch (const rlx::Error&) {
    } catch (const rlx::cli::CliError&) {
    } catch (const std::bad_alloc&) {
    }
    const cli::ErrorRecord r = cli::describe_exception(error);
    nb::object errors = nb::module_::import_("rlx.errors");
    nb::object cls = errors.attr("class_for")(r.kind);
    nb::object instance =
        cls(r.message, nb::arg("kind") = r.kind, nb::arg("hint") = r.hint,
            nb::arg("node") =
                r.node.empty() ? nb::object(nb::none()) : nb::object(nb::str(r.node.c_str())),
            nb::arg("where") = r.where);
    PyErr_SetObject(cls.ptr(), instance.ptr());
  });
}

}  // namespace rlx::python
