# Hugging Face folders: config.json, tokenizer.json and weights through the safetensors
# importer's sources (frontends/safetensors/src) and the model builders (frontends/builders).
set(hf_src ${RLX_ROOT}/frontends/safetensors/src)
file(GLOB hf_builders ${RLX_ROOT}/frontends/builders/src/*.cpp)
rlx_fuzz_target(hf
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/../hf_fuzz.cpp ${hf_src}/hf_config.cpp
          ${hf_src}/json_file.cpp ${hf_src}/checkpoint.cpp ${hf_src}/quantized_weights.cpp
          ${hf_src}/tokenizer_files.cpp
          ${hf_builders}
  INCLUDES ${hf_src} ${RLX_ROOT}/frontends/builders/include ${RLX_ROOT}/frontends/builders/src)
