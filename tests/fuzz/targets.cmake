# The fuzz targets (tests/fuzz/TARGET.cpp, each an LLVMFuzzerTestOneInput) and the libraries each
# needs; read by tests/fuzz/CMakeLists.txt (libFuzzer builds, TROUPE_FUZZ) and by
# tests/CMakeLists.txt (the corpus replay of every build). scripts/fuzz.sh names them the same.
option(TROUPE_FUZZ "Build the libFuzzer targets of tests/fuzz (clang; see scripts/fuzz.sh)" OFF)

set(troupe_fuzz_targets job_file set_override tensor_wire idx_file join_messages address_token checkpoint_files)
set(troupe_fuzz_libs_job_file troupe_core)
set(troupe_fuzz_libs_set_override troupe_core)
set(troupe_fuzz_libs_tensor_wire troupe_messages)
set(troupe_fuzz_libs_idx_file troupe_core)
set(troupe_fuzz_libs_join_messages troupe_messages)
set(troupe_fuzz_libs_address_token troupe_core)
set(troupe_fuzz_libs_checkpoint_files troupe_core)

# What the targets share (fuzz_common.hpp): one library, whichever file includes this first.
if(NOT TARGET troupe_fuzz_common)
  add_library(troupe_fuzz_common STATIC ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_common.cpp)
  target_link_libraries(troupe_fuzz_common PUBLIC troupe_options troupe_core)
endif()
