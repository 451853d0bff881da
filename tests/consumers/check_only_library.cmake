# devtensor_check_only_library(<devtensor source dir>): fails the consumer's
# configure when devtensor, added as a subproject, added more than its library:
# a subdirectory (tests, examples, bench) or a target other than the library's.
function(devtensor_check_only_library dir)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  if(subdirs)
    message(FATAL_ERROR "devtensor added subdirectories to the consumer's build: ${subdirs}")
  endif()
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  # the library's INTERFACE targets (devtensor::cuda, ::mpi, ::nccl), and devtensor_warnings
  # (flags for devtensor's own targets): none builds anything
  list(REMOVE_ITEM targets devtensor devtensor_cuda devtensor_mpi devtensor_nccl devtensor_warnings)
  if(targets)
    message(FATAL_ERROR "devtensor added targets to the consumer's build: ${targets}")
  endif()
  foreach(option DEVTENSOR_BUILD_TESTS DEVTENSOR_BUILD_EXAMPLES DEVTENSOR_BUILD_BENCHMARKS)
    if(${option})
      message(FATAL_ERROR "${option} is ON in a consumer's build")
    endif()
  endforeach()
  if(NOT TARGET devtensor::devtensor)
    message(FATAL_ERROR "no devtensor::devtensor target")
  endif()
  message(STATUS "devtensor as a subproject: the library only, no tests, examples or benchmarks")
endfunction()

# CUDA is devtensor's own business unless the consumer asks for it (project(... CUDA)).
function(devtensor_check_no_cuda_forced)
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(CUDA IN_LIST languages)
    message(FATAL_ERROR "devtensor enabled CUDA in a consumer that did not ask for it")
  endif()
endfunction()
