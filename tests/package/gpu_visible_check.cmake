# The CUDA backend's default follows a visible GPU (cmake/qfleet_gpu_visible.cmake):
# with stand-in nvidia-smi programs first on PATH, one listing an H200, one failing as
# it does without a driver (exit 9), one finding no device (exit 6, "No devices were
# found"), the check says ON, OFF and OFF.
#   cmake -DSOURCE_DIR=... -DWORK_DIR=... -P gpu_visible_check.cmake
include(${SOURCE_DIR}/cmake/qfleet_gpu_visible.cmake)
file(REMOVE_RECURSE ${WORK_DIR})
set(_path "$ENV{PATH}")
foreach(_case "gpu|0|GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)|ON"
              "no_driver|9|NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.|OFF"
              "no_device|6|No devices were found|OFF")
  string(REPLACE "|" ";" _f "${_case}")
  list(GET _f 0 _name)
  list(GET _f 1 _rc)
  list(GET _f 2 _text)
  list(GET _f 3 _want)
  file(WRITE ${WORK_DIR}/${_name}/nvidia-smi "#!/bin/sh\necho '${_text}'\nexit ${_rc}\n")
  file(CHMOD ${WORK_DIR}/${_name}/nvidia-smi PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  set(ENV{PATH} "${WORK_DIR}/${_name}:${_path}")
  qfleet_gpu_visible(_got)
  if(NOT _got STREQUAL _want)
    message(FATAL_ERROR "nvidia-smi ${_name} ('${_text}', exit ${_rc}): GPU visible ${_got}, expected ${_want}")
  endif()
  message(STATUS "nvidia-smi ${_name}: GPU visible ${_got}")
endforeach()
set(ENV{PATH} "${_path}")
