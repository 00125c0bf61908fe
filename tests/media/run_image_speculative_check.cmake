# cria run with an image: with speculation (SPEC, e.g. "-md;MODEL" or
# "--spec-type;ngram-simple") the greedy text equals plain decoding's.
set(args run -m ${MODEL} --mmproj ${MMPROJ} --image ${IMAGE}
    -p "Once upon a time <__media__> there was a little girl. Once upon a time there was" -n 40 --temp 0 -t 1)
execute_process(COMMAND ${CRIA} ${args} OUTPUT_VARIABLE plain ERROR_VARIABLE plain_err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "plain run failed: ${plain_err}")
endif()
execute_process(COMMAND ${CRIA} ${args} --spec-draft-n-max 4 ${SPEC} OUTPUT_VARIABLE spec ERROR_VARIABLE spec_err
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "speculative run failed: ${spec_err}")
endif()
if(NOT spec STREQUAL plain)
  message(FATAL_ERROR "speculative output differs:\n--- plain\n${plain}\n--- ${SPEC}\n${spec}")
endif()
if(NOT spec_err MATCHES "n_drafted *= *[1-9]")
  message(FATAL_ERROR "nothing was drafted:\n${spec_err}")
endif()
