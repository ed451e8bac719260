# Optional GPU and launcher dependencies. Each TRAINSIM_WITH_<dep> is AUTO, ON or OFF:
# AUTO uses the dependency when found and prints why not otherwise; ON fails with a fix-it.
include(CheckLanguage)

function(trainsim_dependency_result dep found reason)
  if(found)
    set(TRAINSIM_HAVE_${dep} ON PARENT_SCOPE)
    message(STATUS "trainsim: ${dep} found (${reason})")
  elseif(TRAINSIM_WITH_${dep} STREQUAL "ON")
    message(FATAL_ERROR "trainsim: TRAINSIM_WITH_${dep}=ON but ${reason}")
  else()
    set(TRAINSIM_HAVE_${dep} OFF PARENT_SCOPE)
    message(STATUS "trainsim: ${dep} disabled (${reason})")
  endif()
endfunction()

# CUDA: the toolkit (cudart, cuBLASLt) and nvcc for the few device kernels. A toolkit without
# nvcc (CUDAToolkit_ROOT naming the PyPI wheels' tree of `make cuda12-benches`) builds both
# benches too: kernels_bench then compiles its device kernels at run time with NVRTC.
set(TRAINSIM_HAVE_CUDA OFF)
set(TRAINSIM_HAVE_CUDA_COMPILER OFF)
if(NOT TRAINSIM_WITH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND CUDAToolkit_ROOT AND EXISTS ${CUDAToolkit_ROOT}/bin/nvcc)
    set(CMAKE_CUDA_COMPILER ${CUDAToolkit_ROOT}/bin/nvcc)
  elseif(NOT CMAKE_CUDA_COMPILER AND NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  # With CUDAToolkit_ROOT, an nvcc on PATH (another CUDA version) is not taken for it.
  if(NOT CUDAToolkit_ROOT OR CMAKE_CUDA_COMPILER)
    check_language(CUDA)
  endif()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND TARGET CUDA::cublasLt)
    if(CMAKE_CUDA_COMPILER)
      if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
        # Explicit list: 'native' fails on GPU-less build hosts.
        set(CMAKE_CUDA_ARCHITECTURES 80 90)
      endif()
      enable_language(CUDA)
      set(TRAINSIM_HAVE_CUDA_COMPILER ON)
      trainsim_dependency_result(CUDA TRUE "CUDA ${CUDAToolkit_VERSION}, nvcc ${CMAKE_CUDA_COMPILER}")
    else()
      trainsim_dependency_result(CUDA TRUE "CUDA ${CUDAToolkit_VERSION} in ${CUDAToolkit_LIBRARY_DIR}, no nvcc: \
kernels_bench compiles its device kernels at run time with NVRTC")
    endif()
  else()
    trainsim_dependency_result(CUDA FALSE "no nvcc or CUDA toolkit with cuBLASLt; set CUDAToolkit_ROOT")
  endif()
else()
  message(STATUS "trainsim: CUDA disabled (TRAINSIM_WITH_CUDA=OFF)")
endif()

# A header + library found under <NAME>_HOME or the CUDA toolkit, as an INTERFACE target.
function(trainsim_find_cuda_library dep header lib target)
  set(TRAINSIM_HAVE_${dep} OFF PARENT_SCOPE)
  if(TRAINSIM_WITH_${dep} STREQUAL "OFF")
    message(STATUS "trainsim: ${dep} disabled (TRAINSIM_WITH_${dep}=OFF)")
    return()
  endif()
  if(NOT TRAINSIM_HAVE_CUDA)
    trainsim_dependency_result(${dep} FALSE "needs CUDA")
    set(TRAINSIM_HAVE_${dep} ${TRAINSIM_HAVE_${dep}} PARENT_SCOPE)
    return()
  endif()
  find_path(${dep}_INCLUDE_DIR ${header} HINTS ${${dep}_HOME} $ENV{${dep}_HOME} ${CUDAToolkit_INCLUDE_DIRS}
            PATH_SUFFIXES include)
  find_library(${dep}_LIBRARY ${lib} HINTS ${${dep}_HOME} $ENV{${dep}_HOME} ${CUDAToolkit_LIBRARY_DIR}
               PATH_SUFFIXES lib lib64)
  if(${dep}_INCLUDE_DIR AND ${dep}_LIBRARY)
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${${dep}_INCLUDE_DIR})
    target_link_libraries(${target} INTERFACE ${${dep}_LIBRARY})
    trainsim_dependency_result(${dep} TRUE "${${dep}_LIBRARY}")
  else()
    trainsim_dependency_result(${dep} FALSE "${header} or lib${lib} not found; set ${dep}_HOME")
  endif()
  set(TRAINSIM_HAVE_${dep} ${TRAINSIM_HAVE_${dep}} PARENT_SCOPE)
endfunction()

# cuDNN (fused attention benches) and NCCL (collective benches).
trainsim_find_cuda_library(CUDNN cudnn.h cudnn trainsim_cudnn)
trainsim_find_cuda_library(NCCL nccl.h nccl trainsim_nccl)

# cudnn-frontend: the header-only C++ graph API over cuDNN that the attention bench builds its
# SDPA graphs with (as TransformerEngine does). `make` unpacks the headers of the PyPI wheel
# nvidia-cudnn-frontend into <build>/_deps/cudnn_frontend; CUDNN_FRONTEND_HOME points elsewhere.
set(TRAINSIM_HAVE_CUDNN_FRONTEND OFF)
if(TRAINSIM_HAVE_CUDNN)
  find_path(CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h
            HINTS ${CUDNN_FRONTEND_HOME} $ENV{CUDNN_FRONTEND_HOME} ${PROJECT_BINARY_DIR}/_deps/cudnn_frontend
            PATH_SUFFIXES include NO_DEFAULT_PATH)
  if(CUDNN_FRONTEND_INCLUDE_DIR)
    add_library(trainsim_cudnn_frontend INTERFACE)
    # SYSTEM: the frontend's own warnings are not ours. Its bundled nlohmann/json stays out
    # (the project uses the system one).
    target_include_directories(trainsim_cudnn_frontend SYSTEM INTERFACE ${CUDNN_FRONTEND_INCLUDE_DIR})
    target_compile_definitions(trainsim_cudnn_frontend INTERFACE CUDNN_FRONTEND_SKIP_JSON_LIB)
    # Its experimental OSS engines compile kernels at run time (NVRTC) and load them (driver API).
    target_link_libraries(trainsim_cudnn_frontend INTERFACE trainsim_cudnn CUDA::nvrtc CUDA::cuda_driver)
    set(TRAINSIM_HAVE_CUDNN_FRONTEND ON)
    message(STATUS "trainsim: cudnn-frontend found (${CUDNN_FRONTEND_INCLUDE_DIR})")
  else()
    message(STATUS "trainsim: cudnn-frontend not found (run `make`, which downloads its headers, or set "
                   "CUDNN_FRONTEND_HOME): attention bench disabled")
  endif()
endif()

# MPI (multi-process launch of comm_bench; its dry-run path needs no GPU).
set(TRAINSIM_HAVE_MPI OFF)
if(NOT TRAINSIM_WITH_MPI STREQUAL "OFF")
  find_package(MPI QUIET COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    trainsim_dependency_result(MPI TRUE "MPI ${MPI_CXX_VERSION}, ${MPIEXEC_EXECUTABLE}")
  else()
    trainsim_dependency_result(MPI FALSE "no MPI C++ library; install libopenmpi-dev")
  endif()
endif()
