# CTest script for `cky tokenize`: run with -DCKY=<path to cky> -DDATA=<tests/data folder>.
# Checks the output on a small fixture, an empty input, and the exit code for a missing file.
execute_process(COMMAND ${CKY} tokenize --input ${DATA}/tokenize_input.txt
                OUTPUT_VARIABLE output RESULT_VARIABLE rc)
file(READ ${DATA}/tokenize_expected.txt expected)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cky tokenize exited with ${rc}")
endif()
if(NOT output STREQUAL expected)
  message(FATAL_ERROR "cky tokenize printed:\n${output}\nexpected:\n${expected}")
endif()

execute_process(COMMAND ${CKY} tokenize --input ${DATA}/does_not_exist.txt
                OUTPUT_VARIABLE output ERROR_VARIABLE error RESULT_VARIABLE rc)
if(NOT rc EQUAL 1 OR NOT error MATCHES "does_not_exist.txt")
  message(FATAL_ERROR "missing input: exit ${rc}, stderr '${error}' (want 1 and the file name)")
endif()

file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/cky_tokenize_empty.txt "\n  \n")
execute_process(COMMAND ${CKY} tokenize --input ${CMAKE_CURRENT_BINARY_DIR}/cky_tokenize_empty.txt
                OUTPUT_VARIABLE output RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT output STREQUAL "")
  message(FATAL_ERROR "blank input: exit ${rc}, output '${output}' (want 0 and nothing)")
endif()
