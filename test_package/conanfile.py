"""conan create's check of the package: a consumer project built against it."""
import os

from conan import ConanFile
from conan.errors import ConanException
from conan.tools.build import can_run
from conan.tools.cmake import CMake, cmake_layout


class DevtensorTestConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    generators = "CMakeToolchain", "CMakeDeps"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        # every package holds the LICENSE and devtensor::cuda's config file (CUDA toolkit or not)
        package = self.dependencies[self.tested_reference_str].package_folder
        for path in ("licenses/LICENSE", "share/doc/devtensor/LICENSE",
                     "share/cmake/devtensor/devtensorCudaTargets.cmake"):
            if not os.path.isfile(os.path.join(package, path)):
                raise ConanException(f"the devtensor package has no {path} ({package})")
        self.output.info("devtensor package: LICENSE and devtensorCudaTargets.cmake present")
        if can_run(self):
            self.run(os.path.join(self.cpp.build.bindir, "test_package"), env="conanrun")
