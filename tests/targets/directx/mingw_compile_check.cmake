# Compiles the directx target's Windows-only sources (the D3D12 host, and the plugin with _WIN32
# set) with MinGW-w64 against its real d3d12.h / dxgi1_6.h, to object files: proof that the code
# Linux never builds still compiles. Nothing is linked or run (no Windows here).
# In: SOURCES (;-list), INCLUDES (;-list), FMT_INCLUDE (the directory holding fmt/), OUT_DIR.
# No cross compiler: prints "SKIPPED: ..." (the test's SKIP_REGULAR_EXPRESSION) and succeeds.
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
set(flags -std=c++20 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Werror
    -isystem ${OUT_DIR}/include)
foreach(dir ${INCLUDES})
  list(APPEND flags -I${dir})
endforeach()
foreach(source ${SOURCES})
  get_filename_component(name ${source} NAME_WE)
  execute_process(COMMAND ${MINGW_CXX} ${flags} -c ${source} -o ${OUT_DIR}/${name}.obj
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${MINGW_CXX} could not compile ${source} for Windows:\n${out}")
  endif()
  message("compiled for Windows (x86_64-w64-mingw32): ${source}")
endforeach()
