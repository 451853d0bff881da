# cmake -DCOMPILER= -DSOURCE= -DINCLUDE= [-DOUTPUT=] [-DEXPECT=] [-DFLAGS=a;b] [-DNO_KERNELS=ON] -P check.cmake
# OUTPUT: compile to that object (nvcc, and NO_KERNELS, need one); without it, g++'s
# -fsyntax-only.
# With EXPECT: SOURCE must fail to compile, its first error saying EXPECT.
# Without: SOURCE (a case's twin, or a file of twins) must compile with -DDEVTENSOR_TWIN;
# NO_KERNELS: and its object must hold no CUDA kernel (nvcc's host stubs), proving that
# static CPU operands instantiate none.
set(flags -std=c++20 ${FLAGS} -I${INCLUDE} ${SOURCE})
if(OUTPUT)
  list(APPEND flags -c -o ${OUTPUT})
else()
  list(APPEND flags -fsyntax-only)  # g++ reports the same first error without generating code
endif()

if(NOT DEFINED EXPECT)
  execute_process(COMMAND ${COMPILER} ${flags} -DDEVTENSOR_TWIN
                  RESULT_VARIABLE twin_result OUTPUT_VARIABLE twin_out ERROR_VARIABLE twin_out)
  if(NOT twin_result EQUAL 0)
    message(FATAL_ERROR "the twin (-DDEVTENSOR_TWIN) of ${SOURCE} must compile, but:\n${twin_out}")
  endif()
  if(NO_KERNELS)
    execute_process(COMMAND nm ${OUTPUT} OUTPUT_VARIABLE symbols RESULT_VARIABLE nm_result)
    if(NOT nm_result EQUAL 0)
      message(FATAL_ERROR "nm ${OUTPUT} failed")
    endif()
    string(REGEX MATCHALL "__device_stub[^\n]*" stubs "${symbols}")
    if(stubs)
      list(LENGTH stubs count)
      message(FATAL_ERROR "the twins of ${SOURCE} instantiated ${count} CUDA kernels for CPU tensors:\n${stubs}")
    endif()
    message(STATUS "the twins hold no CUDA kernel")
  endif()
  message(STATUS "the twins compile")
  return()
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
