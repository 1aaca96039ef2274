# Shared build settings for in-tree libraries and plugins.
set(RLX_ABI_MAJOR 1)
set(RLX_ABI_MINOR 1)  # keep equal to sdk/include/rlx/sdk/abi.h
# Plugins land in one folder of the build tree so the uninstalled `rlx` finds them
# the same way an installed one does (<prefix>/share/rlx/plugins.d).
set(RLX_BUILD_PLUGIN_DIR ${CMAKE_BINARY_DIR}/share/rlx/plugins.d)
set(RLX_INSTALL_PLUGIN_DIR ${CMAKE_INSTALL_DATADIR}/rlx/plugins.d)

function(rlx_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)
endfunction()
