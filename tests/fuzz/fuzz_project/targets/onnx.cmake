# The ONNX importer (frontends/onnx/src) through Debian's protobuf classes, which are not
# instrumented; the harness lives with the importer's tests.
find_package(Protobuf)
find_package(ONNX CONFIG QUIET)
if(Protobuf_FOUND AND TARGET onnx_proto)
  file(GLOB onnx_sources ${RLX_ROOT}/frontends/onnx/src/*.cpp)
  rlx_fuzz_target(onnx
    SOURCES ${RLX_ROOT}/tests/frontends/onnx/onnx_fuzz.cpp ${onnx_sources}
    INCLUDES ${RLX_ROOT}/frontends/onnx/include ${RLX_ROOT}/frontends/onnx/src
    LIBS onnx_proto)
endif()
