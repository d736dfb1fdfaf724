# Every third-party dependency, found once and exposed as an imported target.
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(doctest REQUIRED)
# libcrypto: SHA-256 of checkpoint files (and, with libssl, TLS between processes).
find_package(OpenSSL REQUIRED)

# LibTorch's CMake package adds its flags to TORCH_CXX_FLAGS; Debian's build uses the C++11 ABI,
# which is what system CAF needs (a pre-cxx11-ABI LibTorch would not link with it).
find_package(Torch REQUIRED)

# Debian's libcaf-dev ships no CAFConfig.cmake: wrap the pieces in imported targets.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIB caf_core REQUIRED)
find_library(CAF_IO_LIB caf_io REQUIRED)
if(NOT TARGET caf::core)
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

# TorchConfig.cmake hands back a list of libraries; wrap it so targets link one name.
if(NOT TARGET troupe_torch)
  add_library(troupe_torch INTERFACE)
  target_link_libraries(troupe_torch INTERFACE ${TORCH_LIBRARIES})
  target_include_directories(troupe_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
endif()

# cpp-httplib (Debian's libcpp-httplib-dev, a compiled library): `troupe report --serve`.
find_package(PkgConfig REQUIRED)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
