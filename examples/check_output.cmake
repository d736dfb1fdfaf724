# Runs one example and checks what it prints (ctest's example.* tests, in the tree and in the
# standalone examples build):
#   cmake -DEXAMPLE=path/to/example [-DARGS=a;b] [-DPREPARE=command;args] -DMAX_LOSS=0.5
#         -DMIN_ACCURACY=0.9 -P check_output.cmake
# PREPARE, when given, runs first and must succeed (it writes a file the example reads).
# It must exit 0, print each "step N/M" line at most once, and print "final train loss X" with
# 0 < X < MAX_LOSS (a loss printed as 0 means it read the wrong figure) and every
# "test accuracy Y" at least MIN_ACCURACY.
cmake_minimum_required(VERSION 3.16)  # IN_LIST and friends in script mode
if(PREPARE)
  execute_process(COMMAND ${PREPARE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${PREPARE} exited with ${rc}:\n${out}")
  endif()
endif()
execute_process(COMMAND ${EXAMPLE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXAMPLE} exited with ${rc}")
endif()

string(REGEX MATCHALL "step [0-9]+/[0-9]+" steps "${out}")
set(seen "")
foreach(step IN LISTS steps)
  if(step IN_LIST seen)
    message(FATAL_ERROR "'${step}' printed more than once")
  endif()
  list(APPEND seen "${step}")
endforeach()
if(NOT steps)
  message(FATAL_ERROR "no 'step N/M' line")
endif()

if(NOT out MATCHES "final train loss ([0-9.]+)")
  message(FATAL_ERROR "no 'final train loss X' line")
endif()
set(loss ${CMAKE_MATCH_1})
if(NOT (loss GREATER 0 AND loss LESS MAX_LOSS))
  message(FATAL_ERROR "final train loss ${loss} is not in (0, ${MAX_LOSS})")
endif()

string(REGEX MATCHALL "test accuracy [0-9.]+" accuracies "${out}")
if(NOT accuracies)
  message(FATAL_ERROR "no 'test accuracy Y' line")
endif()
foreach(line IN LISTS accuracies)
  string(REGEX REPLACE "test accuracy " "" accuracy "${line}")
  if(accuracy LESS MIN_ACCURACY)
    message(FATAL_ERROR "test accuracy ${accuracy} is below ${MIN_ACCURACY}")
  endif()
endforeach()
