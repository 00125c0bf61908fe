# llama.cpp's sampling and generation flags take effect in `cria run`:
# greedy continuations of one prompt on austen-7m, each flag against the
# plain run (what must change changes, what must not does not).
# -DCRIA=<binary> -DMODEL=<austen-7m gguf> -DWORK=<scratch dir>
set(base_args run -m ${MODEL} -n 16 --temp 0 -t 2 -c 512 --no-display-prompt)

function(cria_run out_var)
  execute_process(COMMAND ${CRIA} ${base_args} ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cria run ${ARGN} failed (${rc}): ${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(expect_error pattern)
  execute_process(COMMAND ${CRIA} ${base_args} ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(rc EQUAL 0 OR NOT err MATCHES "${pattern}")
    message(FATAL_ERROR "cria run ${ARGN}: expected an error matching '${pattern}', got ${rc}: ${err}")
  endif()
endfunction()

cria_run(base -p "It is a truth")
if(NOT base MATCHES "^\\.  I have been")
  message(FATAL_ERROR "the plain run changed: '${base}'")
endif()

# Flags that change the greedy text.
foreach(flags "--repeat-penalty;1.5" "--presence-penalty;1" "--frequency-penalty;1" "-l;46-inf"
              "--dry-multiplier;1;--dry-allowed-length;1" "--typical;0.5" "--samplers;penalties;--repeat-penalty;2")
  cria_run(out -p "It is a truth" ${flags})
  if(out STREQUAL base)
    message(FATAL_ERROR "cria run ${flags} gave the plain run's text: '${out}'")
  endif()
endforeach()
# ... and those that, by llama.cpp's definitions, must not.
foreach(flags "--repeat-penalty;1.5;--repeat-last-n;0" "--samplers;temperature" "--mirostat;2" "--top-n-sigma;-1"
              "--presence-penalty;0" "-l;46+0" "--jinja" "--keep;-1" "--seed;-1" "-s;7")
  cria_run(out -p "It is a truth" ${flags})
  if(NOT out STREQUAL base)
    message(FATAL_ERROR "cria run ${flags} changed the text: '${out}' vs '${base}'")
  endif()
endforeach()

# Logit bias: banning '.' (46), the plain run's first token.
cria_run(out -p "It is a truth" -l 46-inf)
if(out MATCHES "^\\.")
  message(FATAL_ERROR "-l 46-inf still wrote '.': '${out}'")
endif()

# -r halts right after the reverse prompt is written.
cria_run(out -p "It is a truth" -r little)
if(NOT out MATCHES "little\n\n$" OR out STREQUAL base)
  message(FATAL_ERROR "-r little did not halt there: '${out}'")
endif()

# -f reads the prompt (one trailing newline dropped); escapes are processed unless --no-escape.
file(WRITE ${WORK}/prompt.txt "It is a truth\n")
cria_run(out -f ${WORK}/prompt.txt)
if(NOT out STREQUAL base)
  message(FATAL_ERROR "-f gave '${out}', -p gave '${base}'")
endif()
cria_run(escaped -p "It is a\\x20truth")
if(NOT escaped STREQUAL base)
  message(FATAL_ERROR "-e (the default) did not turn \\x20 into a space: '${escaped}'")
endif()
cria_run(raw -p "It is a\\x20truth" --no-escape)
if(raw STREQUAL base)
  message(FATAL_ERROR "--no-escape still processed the escape")
endif()

# What does not apply is an error naming it.
expect_error("-sys/--system-prompt is for the chat" -p "x" -sys "Be brief")
expect_error("--chat-template" -p "x" --chat-template "{{ x }}")
expect_error("-r/--reverse-prompt needs -p or -f" -r "x")
expect_error("unknown argument '--no-such-flag'" -p "x" --no-such-flag 1)
expect_error("--logit-bias: token 99999 is not in the vocabulary" -p "x" -l 99999+1)
expect_error("--repeat-last-n must be" -p "x" --repeat-last-n -2)
expect_error("-p or -f, not both" -p "x" -f ${WORK}/prompt.txt)
