# The ONNX importer (frontends/onnx/src) through Debian's protobuf classes, which are not
# instrumented; the harness lives with the importer's tests. The converter is a library so that
# the rten target (rten.cmake), which hands its graphs to it, reuses the same objects.
find_package(Protobuf)
find_package(ONNX CONFIG QUIET)
if(Protobuf_FOUND AND TARGET onnx_proto)
  file(GLOB onnx_sources ${RLX_ROOT}/frontends/onnx/src/*.cpp)
  add_library(rlx_onnx_fuzz STATIC ${onnx_sources})
  target_include_directories(rlx_onnx_fuzz PUBLIC ${RLX_ROOT}/frontends/onnx/include
                                                  ${RLX_ROOT}/frontends/onnx/src)
  target_link_libraries(rlx_onnx_fuzz PUBLIC rlx_core_fuzz onnx_proto)
  rlx_fuzz_target(onnx SOURCES ${RLX_ROOT}/tests/frontends/onnx/onnx_fuzz.cpp LIBS rlx_onnx_fuzz)
endif()
