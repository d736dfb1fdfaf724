# The imported targets troupe's libraries link that no package defines for us: CAF (Debian's
# libcaf-dev ships no CAFConfig.cmake), libcsv, LibTorch as one target (TorchConfig.cmake hands back a
# list of libraries) and, in CUDA builds, NCCL. Included by the build (cmake/dependencies.cmake,
# cmake/cuda.cmake) and by the installed troupeConfig.cmake, so that a project linking the
# installed libraries finds these the same way the build did. Expects Threads and Torch found.

# CAF. Without REQUIRED here: the installed config reports a missing CAF as "troupe not found".
find_path(CAF_INCLUDE_DIR caf/all.hpp)
find_library(CAF_CORE_LIB caf_core)
find_library(CAF_IO_LIB caf_io)
if(CAF_INCLUDE_DIR AND CAF_CORE_LIB AND CAF_IO_LIB AND NOT TARGET caf::core)
  add_library(caf::core UNKNOWN IMPORTED)
  set_target_properties(caf::core PROPERTIES
    IMPORTED_LOCATION "${CAF_CORE_LIB}"
    INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
    # CAF starts std::threads; libcaf_core.so does not pull in -pthread for us.
    INTERFACE_LINK_LIBRARIES Threads::Threads)
  add_library(caf::io UNKNOWN IMPORTED)
  set_target_properties(caf::io PROPERTIES
    IMPORTED_LOCATION "${CAF_IO_LIB}"
    INTERFACE_LINK_LIBRARIES caf::core)
endif()

# libcsv (Debian's libcsv-dev): data.type csv. No CMake or pkg-config file ships with it.
find_path(CSV_INCLUDE_DIR csv.h)
find_library(CSV_LIB csv)
if(CSV_INCLUDE_DIR AND CSV_LIB AND NOT TARGET troupe::csv)
  add_library(troupe::csv UNKNOWN IMPORTED)
  set_target_properties(troupe::csv PROPERTIES
    IMPORTED_LOCATION "${CSV_LIB}"
    INTERFACE_INCLUDE_DIRECTORIES "${CSV_INCLUDE_DIR}")
endif()

# libpng and libjpeg-turbo (Debian's libpng-dev, libturbojpeg0-dev): data.type image_folder
# decodes PNG and JPEG with them (core/data/image_decode).
find_path(PNG_INCLUDE_DIR png.h)
find_library(PNG_LIB png16)
find_path(TURBOJPEG_INCLUDE_DIR turbojpeg.h)
find_library(TURBOJPEG_LIB turbojpeg)
foreach(codec PNG TURBOJPEG)
  string(TOLOWER ${codec} name)
  if(${codec}_INCLUDE_DIR AND ${codec}_LIB AND NOT TARGET troupe::${name})
    add_library(troupe::${name} UNKNOWN IMPORTED)
    set_target_properties(troupe::${name} PROPERTIES
      IMPORTED_LOCATION "${${codec}_LIB}"
      INTERFACE_INCLUDE_DIRECTORIES "${${codec}_INCLUDE_DIR}")
  endif()
endforeach()

if(TORCH_LIBRARIES AND NOT TARGET troupe::torch)
  add_library(troupe::torch INTERFACE IMPORTED)
  set_target_properties(troupe::torch PROPERTIES
    INTERFACE_LINK_LIBRARIES "${TORCH_LIBRARIES}"
    INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}")
endif()

# NCCL, where the caller found it (NCCL_INCLUDE_DIR, NCCL_LIBRARY) beside the CUDA toolkit.
if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY AND TARGET CUDA::cudart AND NOT TARGET troupe::nccl)
  add_library(troupe::nccl UNKNOWN IMPORTED)
  set_target_properties(troupe::nccl PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES CUDA::cudart)
endif()
