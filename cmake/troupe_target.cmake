# Helpers shared by every troupe target: warnings, sanitizers, one way to add a test.

add_library(troupe_options INTERFACE)
# Exported with the libraries (as troupe::options, see cmake/install.cmake) for what a user's
# code needs too: the include root, TROUPE_VERSION (actors/cluster/run_node.hpp), TROUPE_WITH_CUDA and the
# sanitizer flags the archives were built with. Our warnings stay ours (BUILD_INTERFACE).
set_target_properties(troupe_options PROPERTIES EXPORT_NAME options)
target_compile_options(troupe_options INTERFACE $<BUILD_INTERFACE:-Wall;-Wextra>)
# GCC 12 at -O2/-O3 reports every move of a std::variant whose alternatives hold vectors or
# strings as "may be used uninitialized" (the step strategies' actions are such variants). LLVM's
# build turns the same check off on GCC for the same reason; -Wuninitialized, which reports
# what is certainly uninitialized, stays on.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(troupe_options INTERFACE $<BUILD_INTERFACE:-Wno-maybe-uninitialized>)
endif()
# Installed headers keep their paths ("actors/run_job.hpp") under include/troupe.
target_include_directories(troupe_options INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/troupe>)
# Nodes and coordinators of different versions refuse each other (core/cluster/join_check).
target_compile_definitions(troupe_options INTERFACE TROUPE_VERSION="${PROJECT_VERSION}")
if(TROUPE_CUDA)
  target_compile_definitions(troupe_options INTERFACE TROUPE_WITH_CUDA)
endif()
if(TROUPE_SANITIZE STREQUAL "address")
  target_compile_options(troupe_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(troupe_options INTERFACE -fsanitize=address,undefined)
elseif(TROUPE_SANITIZE STREQUAL "thread")
  target_compile_options(troupe_options INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(troupe_options INTERFACE -fsanitize=thread)
elseif(NOT TROUPE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "TROUPE_SANITIZE must be empty, 'address' or 'thread', got '${TROUPE_SANITIZE}'")
endif()

# Headers most translation units parse, precompiled once per target (TROUPE_PCH): ATen is 6.5 s
# of a file's compile on a 2-core machine, loaded precompiled 1.5 s. Not LibTorch's nn, optim
# and jit API, though a third of the files include them (12 s): the header then weighs 480 MB
# instead of 290, and loading it costs every other file 2 s more than the third saves.
set(troupe_torch_pch <ATen/ATen.h> <nlohmann/json.hpp>)
set(troupe_caf_pch <caf/all.hpp> ${troupe_torch_pch})

# troupe_precompile(TARGET HEADERS...): TARGET's sources see HEADERS precompiled first.
function(troupe_precompile target)
  if(TROUPE_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()

# troupe_add_doctest(NAME SOURCES... LIBS ... SUITES ... [LABELS ...] [TIMEOUT s] [PCH headers])
# Builds one doctest binary and registers each suite as its own CTest entry, so a failure names
# its suite and suites run in parallel.
function(troupe_add_doctest name)
  cmake_parse_arguments(arg "" "TIMEOUT" "SOURCES;LIBS;SUITES;LABELS;PCH" ${ARGN})
  add_executable(${name} ${PROJECT_SOURCE_DIR}/tests/doctest_main.cpp ${arg_SOURCES})
  target_link_libraries(${name} PRIVATE troupe_options doctest::doctest ${arg_LIBS})
  if(arg_PCH)
    troupe_precompile(${name} ${arg_PCH} <doctest/doctest.h>)
    # Its main() comes from doctest.h under a macro defined before the include.
    set_source_files_properties(${PROJECT_SOURCE_DIR}/tests/doctest_main.cpp
      PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 300)
  endif()
  foreach(suite IN LISTS arg_SUITES)
    add_test(NAME ${name}.${suite} COMMAND ${name} --test-suite=${suite} --no-intro=true)
    set_tests_properties(${name}.${suite} PROPERTIES TIMEOUT ${arg_TIMEOUT}
      ENVIRONMENT "TROUPE_SOURCE_DIR=${PROJECT_SOURCE_DIR};TROUPE_BINARY_DIR=${PROJECT_BINARY_DIR}")
    if(arg_LABELS)
      set_tests_properties(${name}.${suite} PROPERTIES LABELS "${arg_LABELS}")
    endif()
  endforeach()
endfunction()
