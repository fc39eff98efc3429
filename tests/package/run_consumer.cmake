# Installs the already-built qfleet into a scratch prefix, then configures, builds and runs
# examples/cpp, a separate project on find_package(qfleet): its engine program always, its
# LibTorch program where qfleet was built with the PyTorch adapter (TORCH_PREFIX given), its C
# program where qfleet was built with the JSON reader.
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${WORK_DIR}/prefix
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/cpp -B ${WORK_DIR}/build
                        "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix;${TORCH_PREFIX}" -DCMAKE_BUILD_TYPE=Release
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring examples/cpp failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building examples/cpp failed: ${rc}")
endif()
set(programs circuit)
if(TORCH_PREFIX)
  list(APPEND programs train_layer)
endif()
if(EXISTS ${WORK_DIR}/build/c_api)
  list(APPEND programs c_api)
endif()
foreach(program IN LISTS programs)
  execute_process(COMMAND ${WORK_DIR}/build/${program} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  message(STATUS "${out}")
  if(rc)
    message(FATAL_ERROR "examples/cpp's ${program} failed: ${rc}")
  endif()
endforeach()
