# Every third-party dependency, found once and exposed as an imported target.
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(doctest REQUIRED)
# libcrypto: SHA-256 of checkpoint files (and, with libssl, TLS between processes).
find_package(OpenSSL REQUIRED)
# gloo: cluster.collective "gloo", its halving-doubling all-reduce over TCP (core/collective/
# gloo_mesh). Debian's libgloo-dev; the library itself comes with libtorch-dev already. A build
# without it (TROUPE_GLOO=OFF: the GPU machines' bundle has none) refuses that collective.
if(TROUPE_GLOO)
  find_package(Gloo CONFIG REQUIRED)
endif()

# LibTorch's CMake package adds its flags to TORCH_CXX_FLAGS; Debian's build uses the C++11 ABI,
# which is what system CAF needs (a pre-cxx11-ABI LibTorch would not link with it).
find_package(Torch REQUIRED)
# The fused optimizer passes split over LibTorch's intra-op threads with at::parallel_for, whose
# inline half runs in parallel only where _OPENMP is defined (ATen/ParallelOpenMP.h): without
# -fopenmp it runs the whole range on the calling thread. LibTorch uses the same libgomp.
find_package(OpenMP REQUIRED COMPONENTS CXX)

# caf::core, caf::io and troupe::torch (shared with the installed troupeConfig.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/troupe_imported.cmake)
if(NOT TARGET caf::core)
  message(FATAL_ERROR "CAF not found (caf/all.hpp '${CAF_INCLUDE_DIR}', libcaf_core "
    "'${CAF_CORE_LIB}', libcaf_io '${CAF_IO_LIB}'): install Debian's libcaf-dev")
endif()
if(NOT TARGET troupe::csv)
  message(FATAL_ERROR "libcsv not found (csv.h '${CSV_INCLUDE_DIR}', libcsv '${CSV_LIB}'): "
    "install Debian's libcsv-dev")
endif()

if(NOT TARGET troupe::png OR NOT TARGET troupe::turbojpeg)
  message(FATAL_ERROR "libpng or libjpeg-turbo not found (png.h '${PNG_INCLUDE_DIR}', libpng16 "
    "'${PNG_LIB}', turbojpeg.h '${TURBOJPEG_INCLUDE_DIR}', libturbojpeg '${TURBOJPEG_LIB}'): "
    "install Debian's libpng-dev and libturbojpeg0-dev")
endif()

# libmicrohttpd (Debian's libmicrohttpd-dev): `troupe report --serve`. Chosen over cpp-httplib
# 0.11, which gave each connection a thread and bounded neither a request head's size nor its
# time (a slow client held a thread for good; a 97 MB header was read whole).
# Found by its header and library, not pkg-config: the GPU machines unpack Debian's package into a
# folder of their own (scripts/gpu.sh), where its .pc file's prefix=/usr would point elsewhere.
find_path(MHD_INCLUDE_DIR microhttpd.h)
find_library(MHD_LIB microhttpd)
if(NOT MHD_INCLUDE_DIR OR NOT MHD_LIB)
  message(FATAL_ERROR "libmicrohttpd not found (microhttpd.h '${MHD_INCLUDE_DIR}', libmicrohttpd "
    "'${MHD_LIB}'): install Debian's libmicrohttpd-dev")
endif()
add_library(troupe::microhttpd UNKNOWN IMPORTED)
set_target_properties(troupe::microhttpd PROPERTIES
  IMPORTED_LOCATION "${MHD_LIB}" INTERFACE_INCLUDE_DIRECTORIES "${MHD_INCLUDE_DIR}")
