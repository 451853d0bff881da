# vcpkg overlay port for devtensor, header-only. UNTESTED: vcpkg could not be
# installed where this port was written; it follows vcpkg's header-only
# conventions (one release configuration, CMake config and pkg-config fixed up,
# no debug tree).
#
#   vcpkg install devtensor --overlay-ports=<devtensor checkout>/ports
#
# The sources are the checkout this port lives in. For a registry, replace the
# next line with a download of a tagged release, e.g.
#   vcpkg_from_github(OUT_SOURCE_PATH SOURCE_PATH REPO <owner>/devtensor
#                     REF "v${VERSION}" SHA512 <sha512 of the archive> HEAD_REF main)
get_filename_component(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)

set(VCPKG_BUILD_TYPE release)  # header-only: one configuration is all there is

vcpkg_cmake_configure(
    SOURCE_PATH "${SOURCE_PATH}"
    OPTIONS
        -DDEVTENSOR_BUILD_TESTS=OFF
        -DDEVTENSOR_BUILD_EXAMPLES=OFF
        -DDEVTENSOR_BUILD_BENCHMARKS=OFF
        -DDEVTENSOR_ENABLE_CUDA=OFF  # nvcc builds only devtensor's own tests and examples
)
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(CONFIG_PATH share/cmake/devtensor)  # -> share/devtensor
vcpkg_fixup_pkgconfig()

file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug")
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
# devtensor has no LICENSE file yet: vcpkg requires one; add it to the repository first.
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
