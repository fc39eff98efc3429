# QFLEET_CPU_ISAS with a name qfleet has no kernels for stops the configure with the name
# and the known ones. Nothing is built.
#   cmake -DSOURCE_DIR=... -DWORK_DIR=... -P run_cpu_isas.cmake
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -DQFLEET_BUILD_TESTS=OFF
  -DQFLEET_BUILD_BENCH=OFF -DQFLEET_BUILD_TORCH=OFF -DQFLEET_ENABLE_CUDA=OFF "-DQFLEET_CPU_ISAS=avx2;sse9"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "QFLEET_CPU_ISAS: unknown instruction set 'sse9' \\(known: avx2, avx512\\)")
  message(FATAL_ERROR "QFLEET_CPU_ISAS=avx2;sse9 must stop the configure naming sse9, got ${rc}:\n${out}\n${err}")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
message(STATUS "QFLEET_CPU_ISAS: an unknown name is refused")
