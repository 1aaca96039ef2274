# cmake -P script (registered by CMakeLists.txt here). Steps, each printed before it runs:
#   1  cpack the build tree into WORK_DIR/debs: rlx_<v>_<arch>.deb, rlx-dev_<v>_<arch>.deb and
#      one rlx-target-<name>_<v>_<arch>.deb per target of TARGET_PACKAGES
#   2  check the control fields and contents of rlx and rlx-dev: no target but RUNTIME_TARGETS
#   3  check each rlx-target-<name>: its library and manifest only, Depends on the ABI, and every
#      library it needs shipped by rlx or owned by a package it depends on
#   4  dpkg-deb -x rlx and rlx-dev into WORK_DIR/root
#   5  <root>/usr/bin/rlx --list-targets: RUNTIME_TARGETS only, cpu available, every plugin from
#      inside the root
#   6  for each rlx-target-<name>: extract it into the root: exactly one more target, <name>;
#      delete its files from the root: the listing is back to step 5's
#   7  build sdk/examples/hello_target against <root>/usr (find_package(RLX) of rlx-dev),
#      install it into a staging prefix, then move the root elsewhere
#   8  package it with <root>/usr/share/rlx/vendor-target as rlx-target-hello
#   9  extract it into the root: exactly one more target, hello, with hello_status
#  10  delete the files `dpkg-deb -c` lists from the root: the listing is back to step 5's
# Written in CMake rather than shell so the JSON listing is parsed (string(JSON)), not grepped.
cmake_minimum_required(VERSION 3.25)

foreach(v BUILD_DIR SOURCE_DIR WORK_DIR VERSION ABI_MAJOR ABI_MINOR CPACK GENERATOR
          RUNTIME_TARGETS TARGET_PACKAGES)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "test_packages.cmake: -D${v}=... is required")
  endif()
endforeach()
# Comma-separated on the command line: the targets the rlx package carries, and the in-tree
# targets packaged on their own (cmake/RlxCommon.cmake, rlx_add_plugin()).
string(REPLACE "," ";" RUNTIME_TARGETS "${RUNTIME_TARGETS}")
string(REPLACE "," ";" TARGET_PACKAGES "${TARGET_PACKAGES}")
# What the listing says of sdk/examples/hello_target once its package is unpacked.
set(hello_status available)

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

# The Debian package of in-tree target <name> and its file (packaging/CMakeLists.txt names it the
# same way).
function(target_deb name out_package out_deb)
  string(TOLOWER "${name}" package)
  string(REPLACE "_" "-" package "rlx-target-${package}")
  set(${out_package} "${package}" PARENT_SCOPE)
  set(${out_deb} "${DEBS}/${package}_${VERSION}_${ARCH}.deb" PARENT_SCOPE)
endfunction()

# Every shared library an executable or plugin under <dir> needs comes from the package itself,
# from <shipped> (file names rlx ships, for a package depending on the ABI only rlx provides) or
# from a package <deb>'s Depends names: the dependencies are written by hand (packaging/), so
# this is what keeps them true when a plugin starts linking something new.
function(check_needed deb dir shipped)
  run(dpkg-deb -f "${deb}" Depends OUTPUT depends)
  string(STRIP "${depends}" depends)
  string(REPLACE ", " ";" depends_list "${depends}")
  set(depended "")
  foreach(d IN LISTS depends_list)
    string(REGEX REPLACE " .*" "" d "${d}")  # the package name, without its version
    list(APPEND depended "${d}")
  endforeach()
  file(GLOB_RECURSE elf_files "${dir}/usr/bin/*" "${dir}/usr/lib/*.so*" "${dir}/usr/libexec/*"
       "${dir}/usr/share/rlx/*.so")
  foreach(f IN LISTS elf_files)
    get_filename_component(n "${f}" NAME)
    list(APPEND shipped "${n}")
  endforeach()
  set(checked "")
  foreach(f IN LISTS elf_files)
    if(IS_SYMLINK "${f}")
      continue()
    endif()
    execute_process(COMMAND readelf -d "${f}" OUTPUT_VARIABLE dyn ERROR_QUIET)
    string(REGEX MATCHALL "Shared library: \\[[^]]+\\]" needed "${dyn}")
    foreach(entry IN LISTS needed)
      string(REGEX REPLACE "Shared library: \\[([^]]+)\\]" "\\1" lib "${entry}")
      if(lib IN_LIST shipped OR lib IN_LIST checked)
        continue()
      endif()
      list(APPEND checked "${lib}")
      # Owners are looked up once per run: `dpkg -S` reads the whole dpkg database.
      get_property(pkg GLOBAL PROPERTY "owner_of_${lib}")
      if(NOT pkg)
        execute_process(COMMAND dpkg -S "*/${lib}" OUTPUT_VARIABLE owner ERROR_QUIET
                        RESULT_VARIABLE rc)
        if(NOT rc EQUAL 0)
          fail("${f} needs ${lib}, which no installed package owns")
        endif()
        # Several packages may own the name (libc6 and libc6-i386): take this architecture's.
        string(REPLACE "\n" ";" owners "${owner}")
        foreach(line IN LISTS owners)
          if(line MATCHES "^([^:, ]+):${ARCH}: ")
            set(pkg "${CMAKE_MATCH_1}")
            break()
          endif()
        endforeach()
        if(NOT pkg)
          string(REGEX REPLACE "^([^:, ]+).*" "\\1" pkg "${owner}")
        endif()
        set_property(GLOBAL PROPERTY "owner_of_${lib}" "${pkg}")
      endif()
      if(NOT pkg IN_LIST depended)
        fail("${f} needs ${lib} from ${pkg}, which ${deb} does not depend on (Depends: ${depends})")
      endif()
    endforeach()
  endforeach()
  message("[packaging]   every needed library is shipped or depended on: ${checked}")
endfunction()

# A target package holds the plugin's library and manifest, nothing else.
function(expect_plugin_files deb name)
  deb_files("${deb}" files)
  list(SORT files)
  set(expected usr/share/rlx/plugins.d/${name}.toml usr/share/rlx/plugins.d/librlx_target_${name}.so)
  list(SORT expected)
  if(NOT files STREQUAL expected)
    fail("a target package holds its library and manifest only; ${deb} holds: ${files}")
  endif()
endfunction()

# Unpacks target package <deb> into the root; fails unless the listing is <base> plus exactly
# target <name>, with a status in <statuses> (a list).
function(add_target_package deb name base statuses)
  run(dpkg-deb -x "${deb}" "${ROOT}")
  list_targets(got)
  set(rest "${got}")
  list(FILTER rest EXCLUDE REGEX "^${name}=")
  set(entry "${got}")
  list(FILTER entry INCLUDE REGEX "^${name}=")
  string(REPLACE "${name}=" "" status "${entry}")
  if(NOT rest STREQUAL base OR NOT status OR NOT status IN_LIST statuses)
    fail("expected targets ${base} and ${name} (${statuses}), listed ${got}")
  endif()
endfunction()

# Deletes the files `dpkg-deb -c <deb>` lists from the root; fails unless the listing is <base>.
function(remove_target_package deb base)
  deb_files("${deb}" files)
  foreach(f IN LISTS files)
    message("[packaging]   rm ${ROOT}/${f}")
    file(REMOVE "${ROOT}/${f}")
  endforeach()
  list_targets(got)
  if(NOT got STREQUAL base)
    fail("expected the original targets ${base}, listed ${got}")
  endif()
endfunction()

# ---------------------------------------------------------------------------------------------
step(1 "cpack -G DEB of ${BUILD_DIR}")
run(${CPACK} -G DEB --config "${BUILD_DIR}/CPackConfig.cmake" -B "${DEBS}")
set(rlx_deb "${DEBS}/rlx_${VERSION}_${ARCH}.deb")
set(dev_deb "${DEBS}/rlx-dev_${VERSION}_${ARCH}.deb")
set(expected_debs "${rlx_deb}" "${dev_deb}")
foreach(name IN LISTS TARGET_PACKAGES)
  target_deb(${name} package deb)
  list(APPEND expected_debs "${deb}")
endforeach()
list(SORT expected_debs)
file(GLOB made "${DEBS}/*.deb")
list(SORT made)
if(NOT made STREQUAL expected_debs)
  fail("expected exactly ${expected_debs}, cpack wrote: ${made}")
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
foreach(f usr/bin/rlx usr/libexec/rlx/rlx-plugin-probe usr/share/rlx/plugins.d/cpu.toml
         usr/share/rlx/plugins.d/librlx_target_cpu.so)
  if(NOT f IN_LIST rlx_files)
    fail("rlx lacks ${f}; it holds: ${rlx_files}")
  endif()
endforeach()
foreach(f IN LISTS rlx_files)
  if(f MATCHES "^usr/include/|/cmake/|\\.so$" AND NOT f MATCHES "^usr/share/rlx/plugins\\.d/")
    fail("rlx holds ${f}, which belongs in rlx-dev")
  endif()
  # The targets outside RUNTIME_TARGETS are packages of their own.
  if(f MATCHES "^usr/share/rlx/plugins\\.d/librlx_target_(.+)\\.so$"
     AND NOT CMAKE_MATCH_1 IN_LIST RUNTIME_TARGETS)
    fail("rlx holds ${f}: of the targets only ${RUNTIME_TARGETS} belong in rlx, \
the ${CMAKE_MATCH_1} target in rlx-target-${CMAKE_MATCH_1}")
  endif()
endforeach()
foreach(name IN LISTS TARGET_PACKAGES)
  if("usr/share/rlx/plugins.d/${name}.toml" IN_LIST rlx_files)
    fail("rlx holds ${name}.toml, the manifest of a target packaged on its own")
  endif()
endforeach()
run(dpkg-deb -f "${rlx_deb}" Suggests OUTPUT rlx_suggests)
foreach(name IN LISTS TARGET_PACKAGES)
  target_deb(${name} package deb)
  if(NOT rlx_suggests MATCHES "(^|, )${package}(,|\n|$)")
    fail("rlx does not suggest ${package}; Suggests: ${rlx_suggests}")
  endif()
endforeach()
# The vendor template and the conformance suite rlx_add_target_tests() compiles.
foreach(f usr/share/rlx/vendor-target/CMakeLists.txt usr/share/rlx/target-tests/target_suite.cpp
          usr/share/rlx/target-tests/test_support.cpp)
  if(NOT f IN_LIST dev_files)
    fail("rlx-dev lacks ${f}")
  endif()
endforeach()
list(FILTER dev_files INCLUDE REGEX "/RLXConfig\\.cmake$")
if(NOT dev_files)
  fail("rlx-dev holds no RLXConfig.cmake")
endif()

step(3 "control fields, contents and libraries of the rlx-target-<name> packages")
# The libraries rlx ships, which a package depending on rlx-abi-<major> may need.
set(rlx_shipped "")
foreach(f IN LISTS rlx_files)
  get_filename_component(n "${f}" NAME)
  list(APPEND rlx_shipped "${n}")
endforeach()
foreach(name IN LISTS TARGET_PACKAGES)
  target_deb(${name} package deb)
  message("[packaging]   ${deb}")
  run(dpkg-deb -f "${deb}" Package Depends Description OUTPUT control)
  # Shaped like a vendor's package: the ABI first, then what the plugin itself links.
  set(abi_depends "rlx-abi-${ABI_MAJOR} \\(>= ${ABI_MAJOR}\\.${ABI_MINOR}\\)")
  if(NOT control MATCHES "\nDepends: ${abi_depends}(, [^\n]*)?\n")
    fail("${deb} must depend on rlx-abi-${ABI_MAJOR} (>= ${ABI_MAJOR}.${ABI_MINOR}) first:\n${control}")
  endif()
  if(NOT control MATCHES "\nDescription: rlx target plugin: ${name}\n")
    fail("${deb}: the description's synopsis must name the ${name} target:\n${control}")
  endif()
  expect_plugin_files("${deb}" ${name})
  set(dir "${WORK_DIR}/target-${name}")
  run(dpkg-deb -x "${deb}" "${dir}")
  check_needed("${deb}" "${dir}" "${rlx_shipped}")
  file(REMOVE_RECURSE "${dir}")
endforeach()

step(4 "dpkg-deb -x rlx and rlx-dev into ${ROOT}")
run(dpkg-deb -x "${rlx_deb}" "${ROOT}")
run(dpkg-deb -x "${dev_deb}" "${ROOT}")
check_needed("${rlx_deb}" "${ROOT}" "")

step(5 "list the unpacked root's targets: ${RUNTIME_TARGETS}")
list_targets(before)
set(names "${before}")
list(TRANSFORM names REPLACE "=.*" "")
set(expected_names ${RUNTIME_TARGETS})
list(SORT expected_names)
if(NOT names STREQUAL expected_names)
  fail("rlx and rlx-dev alone must list the targets ${expected_names}, listed ${before}")
endif()
if(NOT "cpu=available" IN_LIST before)
  fail("cpu is not listed as available: ${before}")
endif()

step(6 "each rlx-target-<name> alone: unpacked, exactly one more target; deleted, the listing is back")
foreach(name IN LISTS TARGET_PACKAGES)
  target_deb(${name} package deb)
  message("[packaging]   ${package}")
  # GPU runtimes are opened lazily: without one (OpenCL, Vulkan, ...) the target is codegen-only.
  add_target_package("${deb}" ${name} "${before}" "available;codegen-only")
  remove_target_package("${deb}" "${before}")
endforeach()

step(7 "build sdk/examples/hello_target against ${ROOT}/usr")
set(hello_build "${WORK_DIR}/hello-build")
set(hello_stage "${WORK_DIR}/hello-stage")
set(gen_args -G "${GENERATOR}")
if(MAKE_PROGRAM)
  list(APPEND gen_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/sdk/examples/hello_target" -B "${hello_build}" ${gen_args}
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${ROOT}/usr"
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    # Its conformance suite runs in tests/sdk (sdk_install); here the package is under test.
    -DHELLO_BUILD_TESTS=OFF)
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

step(8 "package hello with the vendor template as rlx-target-hello")
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
expect_plugin_files("${hello_deb}" hello)

step(9 "dpkg-deb -x rlx-target-hello into the root: exactly one more target, hello")
add_target_package("${hello_deb}" hello "${before}" ${hello_status})

step(10 "delete rlx-target-hello's files from the root: the listing is back")
remove_target_package("${hello_deb}" "${before}")

file(REMOVE_RECURSE "${WORK_DIR}")
message("[packaging] all steps passed")
