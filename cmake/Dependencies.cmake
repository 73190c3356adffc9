# Optional dependencies: SQLite, OpenBLAS, MPI, CUDA + NCCL. Each is reported once.

find_package(SQLite3 QUIET)

# OpenBLAS: prefer the static archive when TERASIM_STATIC is set.
if(TERASIM_STATIC)
  find_library(OPENBLAS_LIBRARY NAMES libopenblas.a openblas)
else()
  find_library(OPENBLAS_LIBRARY NAMES openblas)
endif()
find_path(OPENBLAS_INCLUDE_DIR NAMES cblas.h PATH_SUFFIXES openblas x86_64-linux-gnu/openblas-pthread)

if(TERASIM_WITH_MPI AND NOT TERASIM_STATIC)
  find_package(MPI QUIET COMPONENTS CXX)
endif()
if(MPI_CXX_FOUND)
  set(TERASIM_HAVE_MPI ON)
else()
  set(TERASIM_HAVE_MPI OFF)
endif()

if(TERASIM_WITH_CUDA)
  find_package(CUDAToolkit QUIET)
endif()
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/include /usr/include)
find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/lib /usr/lib/x86_64-linux-gnu)
if(CUDAToolkit_FOUND)
  set(TERASIM_HAVE_CUDA ON)
else()
  set(TERASIM_HAVE_CUDA OFF)
endif()
if(TERASIM_HAVE_CUDA AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY AND NOT TERASIM_STATIC)
  set(TERASIM_HAVE_NCCL ON)
else()
  set(TERASIM_HAVE_NCCL OFF)
endif()

message(STATUS "terasim: SQLite ${SQLite3_FOUND}, OpenBLAS ${OPENBLAS_LIBRARY}, MPI ${TERASIM_HAVE_MPI}, "
               "CUDA ${TERASIM_HAVE_CUDA}, NCCL ${TERASIM_HAVE_NCCL}")
if(NOT TERASIM_HAVE_CUDA)
  message(STATUS "terasim: CUDA not found; the cuda back end is not built")
endif()
