rlx_fuzz_target(safetensors SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/../safetensors_fuzz.cpp)
