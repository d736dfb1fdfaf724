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

# troupe_reaches_heavy_headers(OUT FILE): whether FILE, or a project header it includes (at any
# depth), includes LibTorch (ATen, c10, torch) or CAF: what the precompiled headers hold. The
# answer of each file is kept for the whole configure step.
function(troupe_reaches_heavy_headers out file)
  get_property(known GLOBAL PROPERTY "troupe_heavy:${file}" SET)
  if(known)
    get_property(heavy GLOBAL PROPERTY "troupe_heavy:${file}")
    set(${out} ${heavy} PARENT_SCOPE)
    return()
  endif()
  # Until known: a header that includes itself again (a loop) adds nothing.
  set_property(GLOBAL PROPERTY "troupe_heavy:${file}" OFF)
  set(heavy OFF)
  file(STRINGS "${file}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  get_filename_component(dir "${file}" DIRECTORY)
  foreach(line IN LISTS includes)
    if(line MATCHES "<(ATen|c10|torch|caf)/")
      set(heavy ON)
    elseif(line MATCHES "\"([^\"]+)\"")
      set(header "${PROJECT_SOURCE_DIR}/${CMAKE_MATCH_1}")
      if(NOT EXISTS "${header}")
        set(header "${dir}/${CMAKE_MATCH_1}")
      endif()
      if(EXISTS "${header}")
        troupe_reaches_heavy_headers(heavy "${header}")
      endif()
    endif()
    if(heavy)
      break()
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY "troupe_heavy:${file}" ${heavy})
  set(${out} ${heavy} PARENT_SCOPE)
endfunction()

# troupe_cxx_sources(OUT TARGET): TARGET's C++ sources, as absolute paths.
function(troupe_cxx_sources out target)
  get_target_property(sources ${target} SOURCES)
  set(paths)
  foreach(source IN LISTS sources)
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(path MATCHES "\\.(cpp|cc|cxx)$")
      list(APPEND paths "${path}")
    endif()
  endforeach()
  set(${out} ${paths} PARENT_SCOPE)
endfunction()

# troupe_skip_precompiled_where_light(TARGET): TARGET's sources that reach neither LibTorch nor
# CAF compile without its precompiled header. Loading the header costs 2.5 to 3.5 s a file on a
# 2-core machine, where such a file takes 0.5 s alone (core/io/hex.cpp: 4.3 s against 0.5 s), and
# even one parsing nlohmann/json compiles faster without it (core/config/json_fields.cpp: 4.3 s
# against 5.8 s). Called in TARGET's directory (source properties are per directory).
function(troupe_skip_precompiled_where_light target)
  troupe_cxx_sources(paths ${target})
  foreach(path IN LISTS paths)
    troupe_reaches_heavy_headers(heavy "${path}")
    if(NOT heavy)
      set_source_files_properties("${path}" PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()

# troupe_precompile(TARGET HEADERS...): TARGET's sources that include LibTorch or CAF see
# HEADERS precompiled first.
function(troupe_precompile target)
  if(TROUPE_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
    troupe_skip_precompiled_where_light(${target})
  endif()
endfunction()

# troupe_unity_batches(TARGET): with TROUPE_UNITY, TARGET's sources compile as a few files each
# including up to TROUPE_UNITY_SIZE of them, those that take the precompiled header apart from
# those that skip it. A test file compiles in 8 to 13 s on a 2-core machine, mostly parsing and
# instantiating the same headers (nlohmann/json, doctest, the project's) as its neighbours;
# batched 8 at a time they took 40 to 55 % less.
function(troupe_unity_batches target)
  # UNITY_BUILD_MODE GROUP came with CMake 3.18.
  if(NOT TROUPE_UNITY OR CMAKE_VERSION VERSION_LESS 3.18)
    return()
  endif()
  troupe_cxx_sources(paths ${target})
  set(count_light 0)
  set(count_heavy 0)
  foreach(path IN LISTS paths)
    get_source_file_property(skip_unity "${path}" SKIP_UNITY_BUILD_INCLUSION)
    if(skip_unity)
      continue()
    endif()
    get_source_file_property(light "${path}" SKIP_PRECOMPILE_HEADERS)
    if(light)
      set(kind light)
    else()
      set(kind heavy)
    endif()
    math(EXPR batch "${count_${kind}} / ${TROUPE_UNITY_SIZE}")
    math(EXPR count_${kind} "${count_${kind}} + 1")
    set_source_files_properties("${path}" PROPERTIES UNITY_GROUP "${kind}_${batch}")
    if(light)
      # The batch file CMake writes is where the header would be included.
      set_source_files_properties(
        "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/${target}.dir/Unity/unity_${kind}_${batch}_cxx.cxx"
        PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
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
  set_source_files_properties(${PROJECT_SOURCE_DIR}/tests/doctest_main.cpp
    PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  troupe_unity_batches(${name})
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
