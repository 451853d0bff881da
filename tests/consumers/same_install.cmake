# Every install of devtensor is the same, CUDA toolkit or not (vcpkg's ABI hash and
# Conan's package_id cannot see the toolkit): configures devtensor afresh with
# find_package(CUDAToolkit) disabled, installs it, and compares the install, file
# by file, with the fixture's prefix (installed from this build, which looked for CUDA).
# cmake -DSOURCE_DIR=... -DPREFIX=... -DWORK_DIR=... -DGENERATOR=... [-DMAKE_PROGRAM=...] -DCXX=...
#       -P same_install.cmake
cmake_minimum_required(VERSION 3.25)  # IN_LIST and the rest of today's policies in -P mode
file(REMOVE_RECURSE "${WORK_DIR}")
set(build "${WORK_DIR}/build")
set(other "${WORK_DIR}/prefix")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${build}" -G "${GENERATOR}"
                        -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON
                        -DDEVTENSOR_ENABLE_CUDA=OFF -DDEVTENSOR_BUILD_TESTS=OFF
                        -DDEVTENSOR_BUILD_EXAMPLES=OFF -DDEVTENSOR_BUILD_BENCHMARKS=OFF
                RESULT_VARIABLE rc OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${output}\nconfiguring devtensor without CUDAToolkit failed (${rc})")
endif()
# CMake must configure a machine without CUDA silently (no warning, no error)
if(output MATCHES "CMake (Warning|Error)")
  message(FATAL_ERROR "${output}\nconfiguring devtensor without CUDAToolkit warned")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${build}" --prefix "${other}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${output}\ncmake --install ${build} --prefix ${other} failed (${rc})")
endif()

file(GLOB_RECURSE files LIST_DIRECTORIES false RELATIVE "${PREFIX}" "${PREFIX}/*")
file(GLOB_RECURSE other_files LIST_DIRECTORIES false RELATIVE "${other}" "${other}/*")
list(SORT files)
list(SORT other_files)
if(NOT files STREQUAL other_files)
  set(only_here ${files})
  list(REMOVE_ITEM only_here ${other_files})
  set(only_there ${other_files})
  list(REMOVE_ITEM only_there ${files})
  message(FATAL_ERROR "the installs differ: only with CUDA looked for: ${only_here}; "
                      "only without CUDAToolkit: ${only_there}")
endif()
if(NOT "share/cmake/devtensor/devtensorCudaTargets.cmake" IN_LIST files)
  message(FATAL_ERROR "no devtensorCudaTargets.cmake in ${PREFIX}")
endif()
foreach(file IN LISTS files)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${PREFIX}/${file}" "${other}/${file}"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${file} differs between ${PREFIX} and ${other} (installed without CUDAToolkit)")
  endif()
endforeach()
list(LENGTH files count)
message(STATUS "the install without CUDAToolkit is the same, file for file (${count} files)")
