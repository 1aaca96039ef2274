# cmake -P script (registered by CMakeLists.txt here). Steps, each printed before it runs:
#   1  cpack the build tree into WORK_DIR/debs: rlx_<v>_<arch>.deb, rlx-dev_<v>_<arch>.deb
#   2  check their control fields and contents
#   3  dpkg-deb -x both into WORK_DIR/root
#   4  <root>/usr/bin/rlx --list-targets: cpu available, every plugin from inside the root
#   5  build sdk/examples/hello_target against <root>/usr (find_package(RLX) of rlx-dev),
#      install it into a staging prefix, then move the root elsewhere
#   6  package it with <root>/usr/share/rlx/vendor-target as rlx-target-hello
#   7  extract it into the root: exactly one more target, hello, codegen-only
#   8  delete the files `dpkg-deb -c` lists from the root: the listing is back to step 4's
# Written in CMake rather than shell so the JSON listing is parsed (string(JSON)), not grepped.
cmake_minimum_required(VERSION 3.25)

foreach(v BUILD_DIR SOURCE_DIR WORK_DIR VERSION ABI_MAJOR ABI_MINOR CPACK GENERATOR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "test_packages.cmake: -D${v}=... is required")
  endif()
endforeach()

set(step_name "setup")
macro(step n text)
  set(step_name "step ${n} (${text})")
  message("[packaging] ${step_name}")
endmacro()
# One quoted argument, so lists in it keep their ';' separators.
function(fail msg)
  message(FATAL_ERROR "[packaging] ${step_name} FAILED: ${msg}\n(work files kept in ${WORK_DIR})")
endfunction()
# Runs a command, prints it, fails the step with its output if it does not exit 0.
function(run)
  cmake_parse_arguments(PARSE_ARGV 0 R "" "OUTPUT" "")
  list(JOIN R_UNPARSED_ARGUMENTS " " shown)
  message("[packaging]   $ ${shown}")
  execute_process(COMMAND ${R_UNPARSED_ARGUMENTS} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    fail("`${shown}` exited with ${rc}\n${out}\n${err}")
  endif()
  if(R_OUTPUT)
    set(${R_OUTPUT} "${out}" PARENT_SCOPE)
  endif()
endfunction()

foreach(tool dpkg-deb dpkg)
  find_program(have_${tool} ${tool})
  if(NOT have_${tool})
    message("SKIPPED: ${tool} not found; the package test needs a Debian system")
    return()
  endif()
endforeach()
execute_process(COMMAND dpkg --print-architecture OUTPUT_VARIABLE ARCH OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT EXISTS "${BUILD_DIR}/CPackConfig.cmake")
  message(FATAL_ERROR "[packaging] ${BUILD_DIR}/CPackConfig.cmake missing: configure with "
                      "-DRLX_BUILD_PACKAGES=ON")
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
set(DEBS "${WORK_DIR}/debs")
set(ROOT "${WORK_DIR}/root")
# Empty XDG dirs: the machine's own ~/.local/share/rlx and /usr/share/rlx plugins stay out.
set(EMPTY "${WORK_DIR}/empty")
file(MAKE_DIRECTORY "${DEBS}" "${ROOT}" "${EMPTY}/home" "${EMPTY}/data")

# Lists the root's targets as "name=status" entries (sorted) in ${out}; fails if the listing
# reports problems, or a plugin comes from outside the root. LD_LIBRARY_PATH is unset: the
# unpacked binary must find its libraries through its own RPATH.
function(list_targets out)
  run(${CMAKE_COMMAND} -E env --unset=RLX_PLUGIN_PATH --unset=RLX_DISABLE_PLUGINS
      --unset=LD_LIBRARY_PATH "XDG_DATA_HOME=${EMPTY}/home" "XDG_DATA_DIRS=${EMPTY}/data"
      "${ROOT}/usr/bin/rlx" --list-targets -v --json OUTPUT json)
  string(JSON n_problems ERROR_VARIABLE jerr LENGTH "${json}" problems)
  if(jerr)
    fail("rlx --list-targets --json did not print the expected JSON (${jerr}):\n${json}")
  endif()
  if(NOT n_problems EQUAL 0)
    fail("the listing reports problems:\n${json}")
  endif()
  string(JSON n LENGTH "${json}" targets)
  set(entries "")
  if(n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON name GET "${json}" targets ${i} name)
      string(JSON status GET "${json}" targets ${i} status)
      string(JSON manifest GET "${json}" targets ${i} manifest)
      string(FIND "${manifest}" "${ROOT}/usr/share/rlx/plugins.d/" at)
      if(NOT at EQUAL 0)
        fail("target ${name} comes from ${manifest}, outside the unpacked root")
      endif()
      list(APPEND entries "${name}=${status}")
    endforeach()
  endif()
  list(SORT entries)
  message("[packaging]   targets: ${entries}")
  set(${out} "${entries}" PARENT_SCOPE)
endfunction()

# Non-directory members of a .deb, as paths relative to the root ("usr/...").
function(deb_files deb out)
  run(dpkg-deb -c "${deb}" OUTPUT listing)
  string(REPLACE "\n" ";" lines "${listing}")
  set(files "")
  foreach(line IN LISTS lines)
    # -rw-r--r-- root/root  1234 2024-01-01 00:00 ./usr/share/...   (links: "... -> target")
    if(line MATCHES "^([^ ])[^ ]* +[^ ]+ +[0-9]+ +[0-9-]+ +[0-9:]+ +\\./([^ ]+)")
      if(NOT CMAKE_MATCH_1 STREQUAL "d")
        list(APPEND files "${CMAKE_MATCH_2}")
      endif()
    elseif(line)
      fail("cannot read this `dpkg-deb -c ${deb}` line: ${line}")
    endif()
  endforeach()
  set(${out} "${files}" PARENT_SCOPE)
endfunction()

function(expect_field deb field expected)
  run(dpkg-deb -f "${deb}" ${field} OUTPUT value)
  string(STRIP "${value}" value)
  if(NOT value STREQUAL expected)
    fail("${deb}: ${field} is '${value}', expected '${expected}'")
  endif()
  message("[packaging]   ${field}: ${value}")
endfunction()

# ---------------------------------------------------------------------------------------------
step(1 "cpack -G DEB of ${BUILD_DIR}")
run(${CPACK} -G DEB --config "${BUILD_DIR}/CPackConfig.cmake" -B "${DEBS}")
set(rlx_deb "${DEBS}/rlx_${VERSION}_${ARCH}.deb")
set(dev_deb "${DEBS}/rlx-dev_${VERSION}_${ARCH}.deb")
file(GLOB made RELATIVE "${DEBS}" "${DEBS}/*.deb")
list(SORT made)
if(NOT made STREQUAL "rlx-dev_${VERSION}_${ARCH}.deb;rlx_${VERSION}_${ARCH}.deb")
  fail("expected exactly rlx_${VERSION}_${ARCH}.deb and rlx-dev_${VERSION}_${ARCH}.deb, \
cpack wrote: ${made}")
endif()

step(2 "control fields and contents of rlx and rlx-dev")
expect_field("${rlx_deb}" Package rlx)
expect_field("${rlx_deb}" Provides "rlx-abi-${ABI_MAJOR} (= ${ABI_MAJOR}.${ABI_MINOR})")
expect_field("${dev_deb}" Package rlx-dev)
run(dpkg-deb -f "${dev_deb}" Depends OUTPUT dev_depends)
if(NOT dev_depends MATCHES "(^|, )rlx \\(= ${VERSION}\\)")
  fail("rlx-dev must depend on rlx (= ${VERSION}), Depends is: ${dev_depends}")
endif()
deb_files("${rlx_deb}" rlx_files)
deb_files("${dev_deb}" dev_files)
foreach(f usr/bin/rlx usr/share/rlx/plugins.d/cpu.toml usr/share/rlx/plugins.d/librlx_target_cpu.so)
  if(NOT f IN_LIST rlx_files)
    fail("rlx lacks ${f}; it holds: ${rlx_files}")
  endif()
endforeach()
foreach(f IN LISTS rlx_files)
  if(f MATCHES "^usr/include/|/cmake/|\\.so$" AND NOT f MATCHES "^usr/share/rlx/plugins\\.d/")
    fail("rlx holds ${f}, which belongs in rlx-dev")
  endif()
endforeach()
foreach(f usr/share/rlx/vendor-target/CMakeLists.txt)
  if(NOT f IN_LIST dev_files)
    fail("rlx-dev lacks ${f}")
  endif()
endforeach()
list(FILTER dev_files INCLUDE REGEX "/RLXConfig\\.cmake$")
if(NOT dev_files)
  fail("rlx-dev holds no RLXConfig.cmake")
endif()

step(3 "dpkg-deb -x rlx and rlx-dev into ${ROOT}")
run(dpkg-deb -x "${rlx_deb}" "${ROOT}")
run(dpkg-deb -x "${dev_deb}" "${ROOT}")

step(4 "list the unpacked root's targets")
list_targets(before)
if(NOT "cpu=available" IN_LIST before)
  fail("cpu is not listed as available: ${before}")
endif()
foreach(entry IN LISTS before)
  if(entry MATCHES "^hello=")
    fail("hello is listed before its package is installed")
  endif()
endforeach()

step(5 "build sdk/examples/hello_target against ${ROOT}/usr")
set(hello_build "${WORK_DIR}/hello-build")
set(hello_stage "${WORK_DIR}/hello-stage")
set(gen_args -G "${GENERATOR}")
if(MAKE_PROGRAM)
  list(APPEND gen_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/sdk/examples/hello_target" -B "${hello_build}" ${gen_args}
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${ROOT}/usr"
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
# The SDK must come from the unpacked rlx-dev, not from a copy installed on this machine.
file(STRINGS "${hello_build}/CMakeCache.txt" rlx_dir REGEX "^RLX_DIR:")
if(NOT rlx_dir MATCHES "=${ROOT}/usr/")
  fail("find_package(RLX) did not use the unpacked rlx-dev: ${rlx_dir}")
endif()
run(${CMAKE_COMMAND} --build "${hello_build}" -j 2)
# Installing (rather than packaging the build tree's files) gives the library its install RPATH.
run(${CMAKE_COMMAND} --install "${hello_build}" --prefix "${hello_stage}")
# Move the root: from here on nothing may rely on the path the plugin was built against (an
# absolute RUNPATH into it would hide a wrong $ORIGIN one), as on a user's machine.
set(moved_root "${WORK_DIR}/root-moved")
message("[packaging]   mv ${ROOT} ${moved_root}")
file(RENAME "${ROOT}" "${moved_root}")
set(ROOT "${moved_root}")

step(6 "package hello with the vendor template as rlx-target-hello")
set(vendor_build "${WORK_DIR}/vendor-build")
run(${CMAKE_COMMAND} -S "${ROOT}/usr/share/rlx/vendor-target" -B "${vendor_build}"
    "-DRLX_PLUGIN_MANIFEST=${hello_stage}/share/rlx/plugins.d/hello.toml"
    "-DRLX_PACKAGE_MAINTAINER=rlx tests <rlx-tests@example.org>")
run(${CPACK} -G DEB --config "${vendor_build}/CPackConfig.cmake" -B "${WORK_DIR}/vendor-debs")
set(hello_deb "${WORK_DIR}/vendor-debs/rlx-target-hello_0.1.0_${ARCH}.deb")
if(NOT EXISTS "${hello_deb}")
  file(GLOB made "${WORK_DIR}/vendor-debs/*.deb")
  fail("expected ${hello_deb}, cpack wrote: ${made}")
endif()
expect_field("${hello_deb}" Package rlx-target-hello)
expect_field("${hello_deb}" Depends "rlx-abi-${ABI_MAJOR} (>= ${ABI_MAJOR}.${ABI_MINOR})")
deb_files("${hello_deb}" hello_files)
list(SORT hello_files)
set(expected_files usr/share/rlx/plugins.d/hello.toml
                   usr/share/rlx/plugins.d/librlx_target_hello.so)
if(NOT hello_files STREQUAL expected_files)
  fail("a vendor package holds its library and manifest only; it holds: ${hello_files}")
endif()

step(7 "dpkg-deb -x rlx-target-hello into the root: exactly one more target")
run(dpkg-deb -x "${hello_deb}" "${ROOT}")
list_targets(with_hello)
set(expected ${before} hello=codegen-only)
list(SORT expected)
if(NOT with_hello STREQUAL expected)
  fail("expected targets ${expected}, listed ${with_hello}")
endif()

step(8 "delete rlx-target-hello's files from the root: the listing is back")
foreach(f IN LISTS hello_files)
  message("[packaging]   rm ${ROOT}/${f}")
  file(REMOVE "${ROOT}/${f}")
endforeach()
list_targets(after)
if(NOT after STREQUAL before)
  fail("expected the original targets ${before}, listed ${after}")
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
message("[packaging] all steps passed")
