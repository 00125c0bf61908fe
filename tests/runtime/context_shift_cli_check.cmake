# cria run --context-shift / --keep (llama-completion's): a tiny context
# on austen-7m, greedy. Without the flag generation stops at the full context
# (as before); with it, it goes on to -n tokens, and its start equals the
# plain run's (the first shift comes when the context is full). Cases where a
# shift cannot be done are errors naming the flag.
# -DCRIA=<binary> -DMODEL=<austen-7m gguf> [-DRECURRENT=<a recurrent model gguf, optional>]
set(base_args run -m ${MODEL} --temp 0 -t 2 -c 24 -n 60 --no-display-prompt -p "It is a truth")

function(cria_run out_var err_var)
  execute_process(COMMAND ${CRIA} ${base_args} ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cria run ${ARGN} failed (${rc}): ${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${err_var} "${err}" PARENT_SCOPE)
endfunction()

function(expect_error pattern)
  execute_process(COMMAND ${CRIA} ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(rc EQUAL 0 OR NOT err MATCHES "${pattern}")
    message(FATAL_ERROR "cria ${ARGN}: expected an error matching '${pattern}', got ${rc}: ${err}")
  endif()
endfunction()

cria_run(plain plain_err)
if(NOT plain_err MATCHES "context full, stopping")
  message(FATAL_ERROR "without --context-shift the run did not stop at the full context: ${plain_err}")
endif()
cria_run(same same_err --keep 3)  # --keep alone changes nothing
if(NOT same STREQUAL plain OR NOT same_err MATCHES "no effect without --context-shift")
  message(FATAL_ERROR "--keep without --context-shift changed the run: '${same}' vs '${plain}'")
endif()

foreach(keep 0 2 -1)
  cria_run(shifted shifted_err --context-shift --keep ${keep})
  if(shifted_err MATCHES "context full" OR NOT shifted_err MATCHES "eval time = [^/]*/ +59 tokens")
    message(FATAL_ERROR "--context-shift --keep ${keep} did not generate 60 tokens in a context of 24: ${shifted_err}")
  endif()
  string(LENGTH "${plain}" n_plain)
  string(LENGTH "${shifted}" n_shifted)
  if(NOT n_shifted GREATER n_plain)
    message(FATAL_ERROR "--context-shift --keep ${keep} wrote no more than the plain run: '${shifted}'")
  endif()
  # The plain run's text less its last token piece (sampled after the last
  # decode) starts the shifted run; 20 characters are well inside that.
  string(SUBSTRING "${plain}" 0 20 head)
  string(FIND "${shifted}" "${head}" at)
  if(NOT at EQUAL 0)
    message(FATAL_ERROR "--context-shift --keep ${keep} changed the text before the first shift: '${shifted}' vs '${plain}'")
  endif()
  set(shifted_${keep} "${shifted}")
endforeach()
# How much is kept changes what follows the first shift.
if(shifted_0 STREQUAL shifted_-1)
  message(FATAL_ERROR "--keep 0 and --keep -1 gave the same text after the shift: '${shifted_0}'")
endif()
cria_run(off off_err --context-shift --no-context-shift)
if(NOT off STREQUAL plain)
  message(FATAL_ERROR "--no-context-shift did not turn the shift off")
endif()

expect_error("--context-shift does not work with speculative decoding" run -m ${MODEL} -p x --context-shift -md ${MODEL})
expect_error("--context-shift is for a completion" run -m ${MODEL} --context-shift)
expect_error("--context-shift does not work with images" run -m ${MODEL} -p x --context-shift --image x.png)
if(RECURRENT AND EXISTS ${RECURRENT})
  expect_error("--context-shift: this model cannot shift its context: layer 0 keeps a recurrent state"
               run -m ${RECURRENT} --tokens 1,2,3 --context-shift)
endif()
