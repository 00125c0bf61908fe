# cria embedding on tiny bert files written by tools/mktinybert.py (WORK: a
# scratch folder): the JSON output is an OpenAI-shaped list of unit vectors,
# identical prompts give identical vectors, the text output ends with the
# cosine similarity matrix, the reranker prints one score per pair and, as
# llama-embedding, scores a line without a tab as it is; raw prints one line
# of values per input; a file without pooling_type gives a row per token
# (llama.cpp's default pooling, none); `cria run` on an encoder fails.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
foreach(kind embedder reranker)
  set(args "")
  if(kind STREQUAL "reranker")
    set(args --reranker)
  endif()
  execute_process(COMMAND ${Python3_EXECUTABLE} ${SOURCE}/tools/mktinybert.py ${WORK}/tiny-bert-${kind}.gguf ${args}
                  RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "mktinybert.py failed (${rc})")
  endif()
endforeach()
set(E ${WORK}/tiny-bert-embedder.gguf)
execute_process(COMMAND ${CRIA} embedding -m ${E} -p "the cat sat\nhello world\nthe cat sat" --embd-output-format json -t 1
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cria embedding failed (${rc})")
endif()
string(JSON n LENGTH "${out}" data)
string(JSON width LENGTH "${out}" data 0 embedding)
if(NOT n EQUAL 3 OR NOT width EQUAL 64)
  message(FATAL_ERROR "expected 3 embeddings of 64, got ${n} of ${width}")
endif()
string(JSON first GET "${out}" data 0 embedding)
string(JSON second GET "${out}" data 1 embedding)
string(JSON third GET "${out}" data 2 embedding)
if(NOT first STREQUAL third OR first STREQUAL second)
  message(FATAL_ERROR "equal prompts must give equal vectors, different ones different vectors")
endif()
execute_process(COMMAND ${CRIA} embedding -m ${E} -p "the cat sat\nhello world" -t 1 OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "embedding 1: .*cosine similarity matrix:.*1\\.00")
  message(FATAL_ERROR "unexpected text output:\n${out}")
endif()
execute_process(COMMAND ${CRIA} embedding -m ${WORK}/tiny-bert-reranker.gguf -t 1
                -p "what is the capital of france?\tparis is the capital of france.\nwhat is the capital of france?\ta dog"
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "rerank score 0: +-?[0-9.]+\nrerank score 1: +-?[0-9.]+\n")
  message(FATAL_ERROR "unexpected rerank output:\n${out}")
endif()
execute_process(COMMAND ${CRIA} embedding -m ${WORK}/tiny-bert-reranker.gguf -t 1 -p "no tab here"
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^\nrerank score 0: +-?[0-9.]+\n\n$")
  message(FATAL_ERROR "a rank pooling input without a tab must be scored as it is:\n${out}")
endif()
execute_process(COMMAND ${CRIA} embedding -m ${E} -p "the cat\\nhello" --embd-output-format raw -t 1
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^-?[0-9]\\.[0-9]+( -?[0-9]\\.[0-9]+)+\n-?[0-9]\\.[0-9]+( -?[0-9]\\.[0-9]+)+\n\n$")
  message(FATAL_ERROR "raw output: two lines of values (the -p escape \\\\n splits the inputs) expected:\n${out}")
endif()
# A file without bert.pooling_type pools as llama.cpp's default, none: a row per token.
execute_process(COMMAND ${Python3_EXECUTABLE} ${SOURCE}/tools/mktinybert.py ${WORK}/tiny-bert-nopool.gguf --no-pooling-type
                RESULT_VARIABLE rc OUTPUT_QUIET)
execute_process(COMMAND ${CRIA} embedding -m ${WORK}/tiny-bert-nopool.gguf -p "the cat" -t 1
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^\nembedding 0: .* \\.\\.\\. .*\nembedding 3: .* \\.\\.\\. .*\n\n$")
  message(FATAL_ERROR "no pooling_type: four per-token rows ([CLS] the cat [SEP]) expected:\n${out}")
endif()
execute_process(COMMAND ${CRIA} run -m ${E} -p hi -n 1 RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "encoder")
  message(FATAL_ERROR "cria run on an encoder must fail naming it: ${err}")
endif()
