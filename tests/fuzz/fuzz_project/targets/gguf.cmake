# The GGUF reader, tokenizer metadata and architecture mapping (frontends/gguf/src).
set(gguf_src ${RLX_ROOT}/frontends/gguf/src)
rlx_fuzz_target(gguf
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/../gguf_fuzz.cpp ${gguf_src}/gguf_reader.cpp
          ${gguf_src}/gguf_value.cpp ${gguf_src}/gguf_types.cpp ${gguf_src}/gguf_tokenizer.cpp
          ${gguf_src}/gguf_model_arch.cpp
  INCLUDES ${gguf_src} ${RLX_ROOT}/frontends/builders/include)
