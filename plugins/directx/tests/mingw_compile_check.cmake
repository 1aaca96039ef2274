# Builds the directx target's Windows-only code with MinGW-w64 against its real d3d12.h and
# dxgi1_6.h: SOURCES are compiled to objects (the plugin's _WIN32 branch), PROGRAM is compiled
# and linked into d3d12_smoke.exe with d3d12 and dxgi (proof that every Windows import resolves).
# Nothing is run (no Windows here). The program uses fmt header-only (no Windows fmt library
# exists), which costs compile time, so the compile-only sources do not.
# In: SOURCES, PROGRAM, INCLUDES (;-lists), FMT_INCLUDE (the directory holding fmt/), OUT_DIR.
# No cross compiler: prints "SKIPPED: ..." (the test's SKIP_REGULAR_EXPRESSION) and succeeds.
cmake_minimum_required(VERSION 3.16)  # IN_LIST, RESULTS_VARIABLE
find_program(MINGW_CXX NAMES x86_64-w64-mingw32-g++-posix x86_64-w64-mingw32-g++)
if(NOT MINGW_CXX)
  message("SKIPPED: no x86_64-w64-mingw32-g++ here, so the D3D12 host sources were not compiled; "
          "apt-get install g++-mingw-w64-x86-64-posix mingw-w64-x86-64-dev to check them")
  return()
endif()
# fmt sits in a system directory next to glibc's headers, which must not reach a Windows compile:
# a directory holding only a link to fmt/ stands in for it.
file(REMOVE_RECURSE ${OUT_DIR})
file(MAKE_DIRECTORY ${OUT_DIR}/include)
file(CREATE_LINK ${FMT_INCLUDE}/fmt ${OUT_DIR}/include/fmt SYMBOLIC)
# RLX_PLUGIN_VERSION: what rlx_add_plugin() defines for every plugin.
set(flags -std=c++20 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Werror
    -isystem ${OUT_DIR}/include "-DRLX_PLUGIN_VERSION=\"0.0.0\"")
foreach(dir ${INCLUDES})
  list(APPEND flags -I${dir})
endforeach()

# Every source at once: execute_process runs its COMMANDs concurrently (as a pipeline whose
# pipes the compiler ignores), and RESULTS_VARIABLE says how each ended.
set(commands)
set(objects)
foreach(source ${SOURCES} ${PROGRAM})
  get_filename_component(name ${source} NAME_WE)
  if(source IN_LIST PROGRAM)
    list(APPEND commands COMMAND ${MINGW_CXX} ${flags} -DFMT_HEADER_ONLY -c ${source} -o ${OUT_DIR}/${name}.obj)
    list(APPEND objects ${OUT_DIR}/${name}.obj)
  else()
    list(APPEND commands COMMAND ${MINGW_CXX} ${flags} -c ${source} -o ${OUT_DIR}/${name}.obj)
  endif()
endforeach()
execute_process(${commands} RESULTS_VARIABLE results OUTPUT_VARIABLE log ERROR_VARIABLE log)
set(i 0)
foreach(source ${SOURCES} ${PROGRAM})
  list(GET results ${i} rc)
  math(EXPR i "${i} + 1")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${MINGW_CXX} could not compile ${source} for Windows:\n${log}")
  endif()
  message("compiled for Windows (x86_64-w64-mingw32): ${source}")
endforeach()
execute_process(COMMAND ${MINGW_CXX} -static -o ${OUT_DIR}/d3d12_smoke.exe ${objects} -ld3d12 -ldxgi
                RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${MINGW_CXX} could not link d3d12_smoke.exe:\n${log}")
endif()
message("linked for Windows: ${OUT_DIR}/d3d12_smoke.exe (not run: no Windows here)")
