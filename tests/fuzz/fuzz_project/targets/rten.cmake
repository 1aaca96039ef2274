# The rten importer (frontends/rten/src): the V1/V2 container, the FlatBuffers verifier and the
# graph translation, through the ONNX converter (onnx.cmake's rlx_onnx_fuzz) into a model.
find_program(RLX_FLATC flatc)
find_path(RLX_FLATBUFFERS_INCLUDE flatbuffers/flatbuffers.h)
if(TARGET rlx_onnx_fuzz AND RLX_FLATC AND RLX_FLATBUFFERS_INCLUDE)
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/rten_generated)
  set(schema ${RLX_ROOT}/frontends/rten/schema/rten.fbs)
  add_custom_command(OUTPUT ${gen}/rten_generated.h
    COMMAND ${RLX_FLATC} --cpp --scoped-enums -o ${gen} ${schema} DEPENDS ${schema})
  file(GLOB rten_sources ${RLX_ROOT}/frontends/rten/src/*.cpp)
  rlx_fuzz_target(rten
    SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/../rten_fuzz.cpp ${rten_sources} ${gen}/rten_generated.h
    INCLUDES ${RLX_ROOT}/frontends/rten/include ${RLX_ROOT}/frontends/rten/src ${gen}
             ${RLX_FLATBUFFERS_INCLUDE}
    LIBS rlx_onnx_fuzz)
endif()
