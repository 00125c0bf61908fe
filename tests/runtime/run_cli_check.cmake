# Runs `cria run` greedily and compares its stdout byte for byte with a file.
# -DCRIA=<binary> -DMODEL=<gguf> -DPROMPT=<text> -DN=<tokens> -DEXPECTED=<file>
execute_process(COMMAND ${CRIA} run -m ${MODEL} -p ${PROMPT} -n ${N} --temp 0 -t 2 -c 512
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cria run failed (${rc}): ${err}")
endif()
file(READ ${EXPECTED} expected)
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "cria run output differs from ${EXPECTED}:\n--- got ---\n${out}\n--- expected ---\n${expected}")
endif()
