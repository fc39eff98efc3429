# Configures qfleet against a Torch package that says it is 1.13.1 (old_torch/):
# QFLEET_BUILD_TORCH=AUTO must skip the adapter with a one-line reason and finish
# configuring; ON must stop with a clear error. Nothing is built.
#   cmake -DSOURCE_DIR=... -DWORK_DIR=... -P run_old_torch.cmake
set(common -S ${SOURCE_DIR} -DTorch_DIR=${SOURCE_DIR}/tests/package/old_torch -DQFLEET_BUILD_TESTS=OFF
    -DQFLEET_BUILD_BENCH=OFF -DQFLEET_ENABLE_CUDA=OFF)
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} ${common} -B ${WORK_DIR}/auto -DQFLEET_BUILD_TORCH=AUTO
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "AUTO with an old Torch must still configure, got ${rc}:\n${out}\n${err}")
endif()
if(NOT out MATCHES "skipping the PyTorch adapter: Torch 1.13.1 at [^\n]* is older than 2"
   OR NOT out MATCHES "qfleet: PyTorch adapter OFF")
  message(FATAL_ERROR "AUTO with an old Torch did not say why it skipped the adapter:\n${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} ${common} -B ${WORK_DIR}/on -DQFLEET_BUILD_TORCH=ON
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "QFLEET_BUILD_TORCH=ON, but Torch 1.13.1")
  message(FATAL_ERROR "ON with an old Torch must stop with a clear error, got ${rc}:\n${out}\n${err}")
endif()
message(STATUS "old Torch: AUTO skipped the adapter, ON refused it")
