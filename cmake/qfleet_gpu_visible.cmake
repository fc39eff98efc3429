# qfleet_gpu_visible(<var>): sets <var> to ON when nvidia-smi lists a GPU ("GPU 0: ..."),
# else OFF (no driver, no device, or none this process may see). CMakeLists.txt builds
# the CUDA backend by default only then, for that GPU (tests/package/gpu_visible_check.cmake).
function(qfleet_gpu_visible var)
  execute_process(COMMAND nvidia-smi -L RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_QUIET)
  if(_rc EQUAL 0 AND _out MATCHES "GPU [0-9]+:")
    set(${var} ON PARENT_SCOPE)
  else()
    set(${var} OFF PARENT_SCOPE)
  endif()
endfunction()
