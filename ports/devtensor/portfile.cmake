# vcpkg overlay port for devtensor, header-only. NOT TESTED in CI: vcpkg cannot be
# installed from the package registries where devtensor is tested; the port follows
# vcpkg's header-only conventions (one release configuration, CMake config and
# pkg-config fixed up). The install is the same on every machine: devtensor::cuda's
# config file is always installed, and defined where the consumer finds CUDA.
#
#   vcpkg install devtensor --overlay-ports=<devtensor checkout>/ports
#   vcpkg install "devtensor[dlpack]" --overlay-ports=<devtensor checkout>/ports
#
# The sources are the checkout this port lives in. vcpkg's ABI hash sees this port's
# files, not that checkout: a later install is restored from the binary cache until
# the version (or the port) changes; add --no-binarycaching while working on it.
# For a registry, replace the next line with a download of a tagged release, e.g.
#   vcpkg_from_github(OUT_SOURCE_PATH SOURCE_PATH REPO <owner>/devtensor
#                     REF "v${VERSION}" SHA512 <sha512 of the archive> HEAD_REF main)
get_filename_component(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)

set(VCPKG_BUILD_TYPE release)  # header-only: one configuration, no debug tree

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

file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
# the LICENSE (Apache-2.0) goes to share/devtensor/copyright, vcpkg's place for it,
# instead of share/doc/devtensor where devtensor's own install puts it
file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/share/doc")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
