# End-to-end checks of `cria inspect`, run by ctest as `cmake -P` so they need
# nothing but CMake (string(JSON) parses the --json output).
#   -DCRIA=<path to cria> -DCHECK=json|bad_file -DFILE=<gguf or other file>

if(CHECK STREQUAL "json")
  execute_process(COMMAND ${CRIA} inspect ${FILE} --json
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cria inspect --json failed (${rc}): ${err}")
  endif()
  string(JSON n_meta LENGTH "${out}" metadata)
  string(JSON n_tensors LENGTH "${out}" tensors)
  string(JSON version GET "${out}" version)
  string(JSON params GET "${out}" totals parameters)
  string(JSON first_key GET "${out}" metadata 0 key)
  string(JSON tokens_len GET "${out}" metadata 0 value length)
  string(JSON emb_shape GET "${out}" tensors 0 shape)
  if(NOT n_meta EQUAL 19 OR NOT n_tensors EQUAL 48 OR NOT version EQUAL 3 OR NOT params EQUAL 292800
     OR NOT first_key STREQUAL "tokenizer.ggml.tokens" OR NOT tokens_len EQUAL 512)
    message(FATAL_ERROR "unexpected JSON: ${n_meta} keys, ${n_tensors} tensors, version ${version}, "
                        "${params} parameters, first key ${first_key} of length ${tokens_len}")
  endif()
  string(REGEX REPLACE "[ \n]" "" emb_shape "${emb_shape}")
  if(NOT emb_shape STREQUAL "[64,512]")
    message(FATAL_ERROR "token_embd.weight shape is ${emb_shape}, expected [64,512]")
  endif()
elseif(CHECK STREQUAL "bad_file")
  execute_process(COMMAND ${CRIA} inspect ${FILE}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "cria inspect accepted ${FILE}")
  endif()
  if(NOT err MATCHES "error: .*not a GGUF file")
    message(FATAL_ERROR "no clear message for a bad file, stderr was: ${err}")
  endif()
else()
  message(FATAL_ERROR "unknown CHECK '${CHECK}'")
endif()
