# cria perplexity --kl-divergence-base / --kl-divergence: austen-7m f32 as the
# base, a Q4_0 quantization of it compared with it (llama-perplexity's report),
# and the base compared with itself.
# -DCRIA=<binary> -DMODEL=<austen-7m f32> -DTEXT=<text> -DWORK=<scratch dir>
set(base ${WORK}/austen7m-base.kld)
set(q4 ${WORK}/austen7m-kl-q4_0.gguf)
execute_process(COMMAND ${CRIA} perplexity -m ${MODEL} -f ${TEXT} -c 128 --chunks 4 -t 2 --kl-divergence-base ${base}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "Final estimate: PPL = ")
  message(FATAL_ERROR "writing the base failed (${rc}): ${out}${err}")
endif()
execute_process(COMMAND ${CRIA} quantize ${MODEL} ${q4} Q4_0 OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "quantize failed (${rc}): ${err}")
endif()

execute_process(COMMAND ${CRIA} perplexity -m ${q4} --kl-divergence-base ${base} --kl-divergence -t 2
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--kl-divergence failed (${rc}): ${err}")
endif()
foreach(line "chunk +PPL +ln\\(PPL\\(Q\\)/PPL\\(base\\)\\) +KL Divergence" "\n   4 +[0-9.]+ ± "
             "Mean PPL\\(Q\\) +: " "Mean PPL\\(base\\) +: " "Mean    KLD: +0\\.00[0-9]+ ± " "Maximum KLD: "
             "99\\.0%   KLD: " "Median  KLD: " "Mean    Δp: " "RMS Δp    : " "Same top p: +9[0-9]\\.[0-9]+ ± ")
  if(NOT out MATCHES "${line}")
    message(FATAL_ERROR "the report lacks '${line}':\n${out}")
  endif()
endforeach()
if(out MATCHES "Mean    KLD: +0\\.000000 ")
  message(FATAL_ERROR "Q4_0 shows no divergence at all:\n${out}")
endif()

execute_process(COMMAND ${CRIA} perplexity -m ${MODEL} --kl-divergence-base ${base} --kl-divergence -t 2
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "Same top p: 100\\.000 ± " OR NOT out MATCHES "Mean    KLD: +-?0\\.00000[0-9] ")
  message(FATAL_ERROR "the base against itself (${rc}):\n${out}${err}")
endif()

execute_process(COMMAND ${CRIA} perplexity -m ${MODEL} --kl-divergence -t 2 OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "--kl-divergence needs --kl-divergence-base")
  message(FATAL_ERROR "--kl-divergence without a base was not refused: ${err}")
endif()
