# The consumers' fixture: installs devtensor from the build tree to a fresh
# prefix (as `cmake --install` would for a user), and packs the source tree
# into an archive for the FetchContent consumer, as a release archive would be.
# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DPREFIX=... -DARCHIVE=... [-DCONFIG=...] -P prepare.cmake
file(REMOVE_RECURSE "${PREFIX}")
set(config_args)
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" ${config_args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${output}\ncmake --install ${BUILD_DIR} --prefix ${PREFIX} failed (${rc})")
endif()
# devtensorCudaTargets.cmake is in every install, CUDA toolkit or not (the config
# loads it where the consumer finds CUDA); so is the LICENSE.
foreach(file share/cmake/devtensor/devtensorConfig.cmake share/cmake/devtensor/devtensorConfigVersion.cmake
             share/cmake/devtensor/devtensorTargets.cmake share/cmake/devtensor/devtensorCudaTargets.cmake
             share/pkgconfig/devtensor.pc share/doc/devtensor/LICENSE
             include/devtensor/devtensor.hpp include/devtensor/dlpack.hpp)
  if(NOT EXISTS "${PREFIX}/${file}")
    message(FATAL_ERROR "cmake --install did not install ${file}")
  endif()
endforeach()
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${SOURCE_DIR}/LICENSE"
                        "${PREFIX}/share/doc/devtensor/LICENSE" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed share/doc/devtensor/LICENSE is not ${SOURCE_DIR}/LICENSE")
endif()
file(READ "${PREFIX}/share/cmake/devtensor/devtensorCudaTargets.cmake" cuda_targets)
foreach(expected "devtensor::devtensor;CUDA::cudart" "DEVTENSOR_CUDA_RUNTIME=1" "-std=c++20")
  string(FIND "${cuda_targets}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the installed devtensorCudaTargets.cmake does not say ${expected}")
  endif()
endforeach()

# what a release archive holds: the sources, not the build folders
file(REMOVE "${ARCHIVE}")
execute_process(COMMAND "${CMAKE_COMMAND}" -E tar czf "${ARCHIVE}" --
                        CMakeLists.txt LICENSE cmake include tests examples bench
                WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "could not pack ${SOURCE_DIR} into ${ARCHIVE}")
endif()
message(STATUS "installed to ${PREFIX}; source archive ${ARCHIVE}")
