# The SDK as a plugin author meets it: `cmake --install` the build into a temporary prefix,
# build sdk/examples/hello_target against it with find_package(RLX), check that the installed
# `rlx --list-targets --json` lists the example, through RLX_PLUGIN_PATH, as available, and run
# the conformance suite the example's build made with rlx_add_target_tests (its main test).
# Run by CTest (tests/sdk/CMakeLists.txt passes the -D variables).
foreach(var BUILD_DIR EXAMPLE_DIR WORK_DIR LIBDIR GENERATOR CXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "test_sdk_install.cmake needs -D${var}=...")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(example_build ${WORK_DIR}/hello-build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

step("installing the build" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f ${LIBDIR}/cmake/RLX/RLXConfig.cmake ${LIBDIR}/cmake/RLX/RLXPlugin.cmake
          include/rlx/sdk/plugin.h include/rlx/sdk/render.h)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the install lacks ${f}")
  endif()
endforeach()

step("configuring the example" ${CMAKE_COMMAND} -S ${EXAMPLE_DIR} -B ${example_build}
     -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX}
     "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}"
     "-DCMAKE_SHARED_LINKER_FLAGS=${LINKER_FLAGS}" "-DCMAKE_MODULE_LINKER_FLAGS=${LINKER_FLAGS}"
     -DCMAKE_PREFIX_PATH=${prefix})
step("building the example" ${CMAKE_COMMAND} --build ${example_build})
foreach(f librlx_target_hello.so hello.toml)
  if(NOT EXISTS ${example_build}/${f})
    message(FATAL_ERROR "building the example did not produce ${f}")
  endif()
endforeach()

if(NOT EXISTS ${prefix}/bin/rlx)
  message("RLX_TEST_SKIPPED: the example builds, but the install has no bin/rlx to list it")
  return()
endif()
step("listing targets"
     ${CMAKE_COMMAND} -E env RLX_PLUGIN_PATH=${example_build}
                             "LD_LIBRARY_PATH=${prefix}/${LIBDIR}:$ENV{LD_LIBRARY_PATH}"
     ${prefix}/bin/rlx --list-targets --json)
set(json "${step_output}")
string(JSON n ERROR_VARIABLE err LENGTH "${json}" targets)
if(err)
  message(FATAL_ERROR "rlx --list-targets --json printed no targets array (${err}):\n${json}")
endif()
set(found FALSE)
if(n GREATER 0)
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${json}" targets ${i} name)
    if(name STREQUAL "hello")
      set(found TRUE)
      string(JSON status GET "${json}" targets ${i} status)
      string(JSON detail GET "${json}" targets ${i} detail)
    endif()
  endforeach()
endif()
if(NOT found)
  message(FATAL_ERROR "target hello is not listed with RLX_PLUGIN_PATH=${example_build}:\n${json}")
endif()
if(NOT status STREQUAL "available")
  message(FATAL_ERROR "hello is listed as '${status}' (${detail}), expected available:\n${json}")
endif()
message(STATUS "hello is listed: ${status} (${detail})")

# The suite loads hello from its build folder and the cpu reference from the prefix, which the
# example's build found through find_package(RLX).
step("running the conformance suite on hello"
     ${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${prefix}/${LIBDIR}:$ENV{LD_LIBRARY_PATH}"
     ${CMAKE_CTEST_COMMAND} --test-dir ${example_build} --output-on-failure -j2)
string(REGEX MATCH "100% tests passed, 0 tests failed out of ([0-9]+)" all_passed "${step_output}")
if(NOT all_passed OR CMAKE_MATCH_1 LESS 20)
  message(FATAL_ERROR "the conformance suite on hello did not pass as a whole (or ran under 20 tests):\n${step_output}")
endif()
# A suite whose target failed to load skips every test, saying why: that is not a pass here.
if(step_output MATCHES "\\*\\*\\*Skipped")
  message(FATAL_ERROR "tests of the conformance suite skipped on hello:\n${step_output}")
endif()
message(STATUS "the conformance suite passed on hello: ${CMAKE_MATCH_1} tests")
