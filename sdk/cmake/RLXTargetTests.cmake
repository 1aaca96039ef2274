# rlx_add_target_tests(): the conformance suite every target runs, in tree and out of tree
# (docs/plugin-authors.md, "Testing a target"). The suite's sources ship with the SDK
# (RLX_TARGET_TESTS_DIR) and are compiled into each target's test program here, against the
# GoogleTest of the build that calls this, so a vendor needs no prebuilt test library.
#
#   rlx_add_target_tests(<name> SOURCES <main and the target's own test files>
#                        [CODEGEN_ONLY] [PLUGIN_DIRS <dir>...] [LINKS <lib>...]
#                        [DEPENDS <build target>...] [PROPERTIES <test property> <value>...])
#
# Builds rlx_<name>_tests and registers every test as "<name>.<Suite>.<Test>" with the label
# <name>. The main (in SOURCES) calls rlx::test::target_suite_main (target_suite.h), which runs
# the primitive suites (every MIR primitive at every dtype, structural ops, HIR ops) on the
# target against hand-computed references and the shared tests against the cpu target.
# CODEGEN_ONLY targets get the refusal tests only (register_codegen_only_tests) and
# GoogleTest's own main.
#
# A build may give every target's test program more (the rlx tree adds its model fixtures): set
# RLX_TARGET_TESTS_EXTRA to an INTERFACE library carrying the sources, libraries, include folders,
# definitions and build dependencies to add.
#
# Targets load through the registry from PLUGIN_DIRS, by default the folder rlx_add_plugin wrote
# rlx_target_<name> to and the plugin folder of the rlx this was found with (RLX_PLUGIN_INSTALL_DIR:
# the cpu target the shared tests compare against).
include_guard(GLOBAL)

function(rlx_add_target_tests name)
  cmake_parse_arguments(PARSE_ARGV 1 T "CODEGEN_ONLY" "" "SOURCES;PLUGIN_DIRS;LINKS;DEPENDS;PROPERTIES")
  if(T_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "rlx_add_target_tests(${name}): unexpected arguments: ${T_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT T_SOURCES)
    message(FATAL_ERROR "rlx_add_target_tests(${name}): SOURCES is required (at least the test main)")
  endif()
  set(plugin rlx_target_${name})
  if(NOT TARGET ${plugin})
    message(FATAL_ERROR "rlx_add_target_tests(${name}): no plugin ${plugin}; call rlx_add_plugin first")
  endif()
  if(NOT TARGET GTest::gtest)
    find_package(GTest REQUIRED)
  endif()
  include(GoogleTest)

  if(NOT T_PLUGIN_DIRS)
    get_target_property(T_PLUGIN_DIRS ${plugin} LIBRARY_OUTPUT_DIRECTORY)
    if(RLX_PLUGIN_INSTALL_DIR)
      list(APPEND T_PLUGIN_DIRS "${RLX_PLUGIN_INSTALL_DIR}")
    endif()
  endif()
  list(REMOVE_DUPLICATES T_PLUGIN_DIRS)
  list(JOIN T_PLUGIN_DIRS ":" plugin_path)

  set(dir "${RLX_TARGET_TESTS_DIR}")
  if(NOT EXISTS "${dir}/target_suite.cpp")
    message(FATAL_ERROR "rlx_add_target_tests(${name}): the conformance suite is not in '${dir}' "
                        "(RLX_TARGET_TESTS_DIR); install the rlx SDK (rlx-dev) it ships with")
  endif()
  set(suite ${dir}/target_suite.cpp ${dir}/suite_programs.cpp ${dir}/test_support.cpp)
  if(T_CODEGEN_ONLY)
    set(main GTest::gtest_main)
  else()
    list(APPEND suite ${dir}/test_primitives.cpp ${dir}/test_structural.cpp ${dir}/test_hir_ops.cpp
                      ${dir}/test_matmul.cpp ${dir}/test_training.cpp
                      ${dir}/test_half_attention.cpp ${dir}/test_fused_kernels.cpp
                      ${dir}/test_constant_kernels.cpp)
    set(main "")
  endif()

  set(exe rlx_${name}_tests)
  add_executable(${exe} ${T_SOURCES} ${suite})
  target_include_directories(${exe} PRIVATE ${dir})
  target_link_libraries(${exe} PRIVATE rlx::core rlx::registry fmt::fmt GTest::gtest ${main} ${T_LINKS} ${RLX_TARGET_TESTS_EXTRA})
  target_compile_features(${exe} PRIVATE cxx_std_20)
  target_compile_definitions(${exe} PRIVATE RLX_TEST_PLUGIN_DIR="${plugin_path}")
  add_dependencies(${exe} ${plugin} ${T_DEPENDS})
  gtest_discover_tests(${exe} TEST_PREFIX "${name}." DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${name}" TIMEOUT 900 ${T_PROPERTIES})
endfunction()
