# Installation and packaging: `cmake --install build --prefix P` puts the troupe program, the
# static libraries, their headers and a CMake package in place, so that another project can
#   find_package(troupe 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE troupe::actors)
# (examples/CMakeLists.txt does exactly that when built on its own); `cpack -G DEB` in the build
# folder makes Debian packages of the same files: troupe (the program) and troupe-dev (the rest).
include(CMakePackageConfigHelpers)

# The exported names (troupe::core, ...) are also aliases in the build, so that the examples
# link the same names in the tree as against an installed troupe.
set(_troupe_libraries troupe_metrics troupe_core troupe_report troupe_messages troupe_gpu troupe_actors)
if(TROUPE_CUDA)
  list(APPEND _troupe_libraries troupe_gpu_raw)
endif()
foreach(lib IN LISTS _troupe_libraries)
  string(REGEX REPLACE "^troupe_" "" name ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${name})
  add_library(troupe::${name} ALIAS ${lib})
endforeach()
add_library(troupe::options ALIAS troupe_options)

set(TROUPE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/troupe)
install(TARGETS troupe RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(TARGETS troupe_options ${_troupe_libraries} EXPORT troupeTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
# Every header of the libraries (include/troupe/core/..., actors/, messages/): the public ones
# include their neighbours freely, and the sources stay out.
install(DIRECTORY core actors messages DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/troupe
  COMPONENT dev FILES_MATCHING PATTERN "*.hpp")
install(EXPORT troupeTargets NAMESPACE troupe:: DESTINATION ${TROUPE_INSTALL_CMAKEDIR}
  COMPONENT dev)
configure_package_config_file(cmake/troupeConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/troupeConfig.cmake INSTALL_DESTINATION ${TROUPE_INSTALL_CMAKEDIR})
# 0.x: a minor release may change the API, so only the same major.minor satisfies a request.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/troupeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/troupeConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/troupeConfigVersion.cmake cmake/troupe_imported.cmake
  DESTINATION ${TROUPE_INSTALL_CMAKEDIR} COMPONENT dev)

# Debian packages. The program's Depends come from dpkg-shlibdeps (dpkg-dev) on the binary; the
# -dev package holds static archives, so it needs what they link at the user's link step: the
# -dev packages of the libraries troupeConfig.cmake finds.
set(CPACK_PACKAGE_NAME troupe)
set(CPACK_PACKAGE_VENDOR troupe)
set(CPACK_PACKAGE_CONTACT "troupe maintainers <troupe@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "training orchestrator on the actor model (CAF + LibTorch)")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME troupe)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
# The default job's data (data.path) and the BLAS that makes Debian's libtorch fast
# (scripts/install_deps.sh says why).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "dataset-fashion-mnist, libopenblas0-openmp")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "the troupe program: trains neural networks from JSON job files")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME troupe-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
  "troupe (= ${PROJECT_VERSION}), libcaf-dev, libtorch-dev, nlohmann-json3-dev, libfmt-dev, libssl-dev, libcsv-dev, libpng-dev, libturbojpeg0-dev, zlib1g-dev")
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "troupe's static libraries, headers and CMake package (find_package(troupe))")
include(CPack)
