# The library built from its sources: the core, the CPU kernels once per instruction set,
# and the CUDA backend where it is enabled (CMakeLists.txt includes this unless
# QFLEET_PREBUILT_LIBRARY names a library built before).
add_library(qfleet
  src/core/gates.cpp
  src/core/observable.cpp
  src/core/circuit.cpp
  src/core/circuit_noise.cpp
  src/core/channels.cpp
  src/core/dm_compile.cpp
  src/core/dm_program.cpp
  src/core/dm_pack.cpp
  src/core/noise_model.cpp
  src/core/device_lowering.cpp
  src/core/compile.cpp
  src/core/program.cpp
  src/core/open_system.cpp
  src/core/structured_ops.cpp
  src/core/control_systems.cpp
  src/core/open_compile.cpp
  src/core/open_lindblad.cpp
  src/core/open_program.cpp
  src/core/open_stability.cpp
  src/core/sv_pack.cpp
  src/core/perm_runs.cpp
  src/core/diag_runs.cpp
  src/core/open_pack.cpp
  src/core/executor.cpp
  src/core/files.cpp
  src/cpu/cpu_executors.cpp
  src/cpu/cpu_isa.cpp
  src/cpu/task_pool.cpp
  src/cpu/parallel.cpp
  src/cpu/open_cpu.cpp
  src/cpu/sv_cpu.cpp
  src/cpu/dm_cpu.cpp)
add_library(qfleet::qfleet ALIAS qfleet)
if(QFLEET_FUZZ)
  get_target_property(_qfleet_sources qfleet SOURCES)
  list(FILTER _qfleet_sources INCLUDE REGEX "^src/core/")
  set_property(SOURCE ${_qfleet_sources} APPEND PROPERTY COMPILE_OPTIONS ${QFLEET_FUZZ_COVERAGE})
endif()
target_include_directories(qfleet
  PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<BUILD_INTERFACE:${QFLEET_GENERATED_INCLUDE}>
         $<INSTALL_INTERFACE:include>
  PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_features(qfleet PUBLIC cxx_std_20)
target_link_libraries(qfleet PUBLIC OpenMP::OpenMP_CXX)
target_compile_options(qfleet PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${QFLEET_WARNINGS}>)

# The cpu kernels are compiled once per instruction set and picked at run time, so
# nothing the user builds depends on -march=native: an object library per ISA holds
# each model kind's kernels (src/cpu/isa_{sv,dm,open}.cpp, a translation unit each,
# so they compile in parallel and each keeps its own inlining budget) and the row
# tying them together (isa_row.cpp). Lanes = samples per SIMD tile.
# -fno-math-errno: no kernel reads errno, and without it sqrt is a call the compiler
# cannot put in vector lanes (the adaptive solvers' error norm, kernels/open_task.hpp).
function(qfleet_cpu_isa isa lanes_f32 lanes_f64 flags)
  set(lib qfleet_isa_${isa})
  add_library(${lib} OBJECT src/cpu/isa_sv.cpp src/cpu/isa_dm.cpp src/cpu/isa_open.cpp src/cpu/isa_row.cpp)
  target_include_directories(${lib} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include ${QFLEET_GENERATED_INCLUDE})
  target_compile_features(${lib} PRIVATE cxx_std_20)
  target_link_libraries(${lib} PRIVATE OpenMP::OpenMP_CXX)
  target_compile_definitions(${lib} PRIVATE QFLEET_KERN_ISA=${isa} QFLEET_LANES_F32=${lanes_f32}
                                            QFLEET_LANES_F64=${lanes_f64})
  target_compile_options(${lib} PRIVATE ${QFLEET_WARNINGS} ${flags} $<$<CONFIG:Release,RelWithDebInfo>:-O3>
                                        -fno-math-errno)
  target_sources(qfleet PRIVATE $<TARGET_OBJECTS:${lib}>)
endfunction()
# QFLEET_CPU_ISAS names the wider sets compiled beside baseline (all by default): a tree
# that only ever runs on the machine that builds it, such as scripts/test.sh's sanitizer
# trees, compiles that machine's alone rather than kernels nothing there can run.
set(QFLEET_CPU_ISAS "avx2;avx512" CACHE STRING "Instruction sets compiled beside baseline (x86-64: avx2, avx512)")
foreach(_isa IN LISTS QFLEET_CPU_ISAS)
  if(NOT _isa MATCHES "^(avx2|avx512)$")
    message(FATAL_ERROR "QFLEET_CPU_ISAS: unknown instruction set '${_isa}' (known: avx2, avx512)")
  endif()
endforeach()
qfleet_cpu_isa(baseline 8 4 "")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
  if("avx2" IN_LIST QFLEET_CPU_ISAS)
    target_compile_definitions(qfleet PRIVATE QFLEET_HAVE_AVX2)
    qfleet_cpu_isa(avx2 8 4 "-mavx2;-mfma")
  endif()
  if("avx512" IN_LIST QFLEET_CPU_ISAS)
    target_compile_definitions(qfleet PRIVATE QFLEET_HAVE_AVX512)
    qfleet_cpu_isa(avx512 16 8
                   "-mavx512f;-mavx512dq;-mavx512vl;-mavx512bw;-mavx2;-mfma;-mprefer-vector-width=512")
  endif()
endif()

if(QFLEET_ENABLE_CUDA)
  # CUDA sources build as C++17 (CMake 3.25 cannot ask nvcc for C++20) behind the
  # plain declarations of src/cuda/sv_cuda.hpp; they include the shared kernel
  # headers (src/kernels), never the C++20 public API.
  # Each open-system kernel kind is its own translation unit (open_cuda_k_*.cu) and
  # nvcc builds the architectures in parallel (--threads): the kernels' bodies are
  # large, and this keeps a parallel build's longest step to about one kernel.
  # The host side (cuda_backend.cpp: the backend the library registers) is in the same
  # object library, so that building qfleet_cuda alone checks all of the backend's code
  # (scripts/test.sh on a machine with nvcc and no GPU).
  add_library(qfleet_cuda OBJECT src/cuda/sv_cuda.cu src/cuda/dm_cuda.cu src/cuda/open_cuda.cu src/cuda/open_cuda_k_qubit.cu
              src/cuda/open_cuda_k_thread.cu src/cuda/open_cuda_k_group.cu src/cuda/open_cuda_k_tile.cu
              src/cuda/cuda_backend.cpp src/cuda/cuda_staging.cpp src/cuda/launch_names.cpp)
  set_target_properties(qfleet_cuda PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
  target_include_directories(qfleet_cuda PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include ${QFLEET_GENERATED_INCLUDE})
  target_compile_features(qfleet_cuda PRIVATE cxx_std_20)
  target_link_libraries(qfleet_cuda PRIVATE CUDA::cudart_static OpenMP::OpenMP_CXX)
  target_compile_options(qfleet_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr --threads=0>
                                             $<$<COMPILE_LANGUAGE:CXX>:${QFLEET_WARNINGS}>)
  target_sources(qfleet PRIVATE $<TARGET_OBJECTS:qfleet_cuda>)
  set_target_properties(qfleet PROPERTIES CUDA_STANDARD 17)
  target_link_libraries(qfleet PRIVATE CUDA::cudart_static)
else()
  target_sources(qfleet PRIVATE src/core/no_device_backend.cpp)  # device_backend() == nullptr
endif()
