# Shared build settings for in-tree libraries and plugins.
# The plugin ABI version has one source, sdk/include/rlx/sdk/abi.h; manifests, packages and the
# CLI read it from there.
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/../sdk/include/rlx/sdk/abi.h rlx_abi_lines
     REGEX "^#define RLX_ABI_(MAJOR|MINOR) [0-9]+$")
foreach(line IN LISTS rlx_abi_lines)
  string(REGEX MATCH "RLX_ABI_(MAJOR|MINOR) ([0-9]+)" _ "${line}")
  set(RLX_ABI_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
endforeach()
if(NOT DEFINED RLX_ABI_MAJOR OR NOT DEFINED RLX_ABI_MINOR)
  message(FATAL_ERROR "cannot read RLX_ABI_MAJOR/MINOR from sdk/include/rlx/sdk/abi.h")
endif()
# Plugins land in one folder of the build tree so the uninstalled `rlx` finds them
# the same way an installed one does (<prefix>/share/rlx/plugins.d).
set(RLX_BUILD_PLUGIN_DIR ${CMAKE_BINARY_DIR}/share/rlx/plugins.d)
set(RLX_INSTALL_PLUGIN_DIR ${CMAKE_INSTALL_DATADIR}/rlx/plugins.d)
# The targets the `rlx` package carries (with the importers); every other in-tree target is
# packaged on its own as rlx-target-<name>, as a vendor's would be (packaging/README.md).
set(RLX_RUNTIME_TARGETS cpu)

function(rlx_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)
endfunction()
