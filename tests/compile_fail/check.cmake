# cmake -DCOMPILER= -DSOURCE= -DINCLUDE= -DEXPECT= -DOUTPUT= -P check.cmake
set(flags -std=c++20 -I${INCLUDE} -c ${SOURCE} -o ${OUTPUT})

execute_process(COMMAND ${COMPILER} ${flags} -DDEVTENSOR_TWIN
                RESULT_VARIABLE twin_result OUTPUT_VARIABLE twin_out ERROR_VARIABLE twin_out)
if(NOT twin_result EQUAL 0)
  message(FATAL_ERROR "the twin (-DDEVTENSOR_TWIN) of ${SOURCE} must compile, but:\n${twin_out}")
endif()

execute_process(COMMAND ${COMPILER} ${flags}
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it must fail with: ${EXPECT}")
endif()
string(REGEX MATCH "[^\n]*error[^\n]*" first_error "${out}")
string(FIND "${first_error}" "${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${SOURCE}: the first error is\n  ${first_error}\nbut should say\n  ${EXPECT}\nfull output:\n${out}")
endif()
message(STATUS "fails as expected: ${first_error}")
