# GPU support (gpu/). TROUPE_CUDA is ON when LibTorch was built with CUDA (its CMake package then
# defines c10_cuda) and the CUDA toolkit and NCCL are found; OFF otherwise, and the CPU build is
# complete without it. Where only the toolkit and NCCL are found (a CPU LibTorch beside
# /usr/local/cuda, as on our CI machines), the raw CUDA/NCCL code still builds and links (its
# device tests skip without a GPU) and the LibTorch-CUDA glue and its tests are compiled, not
# linked, against LibTorch's CUDA headers, so that they cannot rot unseen.
find_package(CUDAToolkit QUIET)
set(_nccl_roots $ENV{NCCL_HOME} ${NCCL_HOME} ${CUDAToolkit_LIBRARY_ROOT})
find_path(NCCL_INCLUDE_DIR nccl.h
  HINTS ${_nccl_roots} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
# Python's nvidia-nccl wheels ship only the versioned name.
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2
  HINTS ${_nccl_roots} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)

set(TROUPE_CUDA_TOOLKIT OFF)
if(CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
  set(TROUPE_CUDA_TOOLKIT ON)
  include(${CMAKE_CURRENT_LIST_DIR}/troupe_imported.cmake)  # troupe::nccl
endif()

set(_torch_cuda OFF)
if(TARGET c10_cuda OR TARGET torch_cuda)
  set(_torch_cuda ON)
endif()
set(_cuda_default OFF)
if(_torch_cuda AND TROUPE_CUDA_TOOLKIT)
  set(_cuda_default ON)
endif()
option(TROUPE_CUDA "GPU workers: CUDA streams and NCCL (needs a CUDA LibTorch and NCCL)"
  ${_cuda_default})
if(TROUPE_CUDA AND NOT _cuda_default)
  message(FATAL_ERROR "TROUPE_CUDA=ON needs a CUDA build of LibTorch and NCCL; found: "
    "LibTorch with CUDA ${_torch_cuda}, CUDA toolkit ${CUDAToolkit_FOUND}, "
    "nccl.h '${NCCL_INCLUDE_DIR}', libnccl '${NCCL_LIBRARY}' (set NCCL_HOME to point at NCCL)")
endif()
message(STATUS "troupe: TROUPE_CUDA=${TROUPE_CUDA} (LibTorch with CUDA: ${_torch_cuda}, "
  "CUDA toolkit and NCCL: ${TROUPE_CUDA_TOOLKIT})")
