"""conveyor's Python package, built by CMake through setuptools (pyproject.toml; pip install runs this).

By default the whole project is configured in build-pip/ with its programs and tests off, and only the
module's target is built: the libraries it links (conveyor::data, conveyor::cuda; the GPU parts where
CMake finds a CUDA compiler, as for the C++ build), compiled in unity batches since this folder is built
once, not edited. Then `cmake --install --component python_package` lays out the package with the shared
libraries it needs (python/cmake/ConveyorPythonPackage.cmake). pip's --config-settings change that
(python/packaging/conveyor_build.py hands them over as CONVEYOR_PIP_* variables):
  build-dir=DIR        DIR is this project's configured CMake build folder (./conveyor.sh build's, say): the
                       module is built there (nothing to do when it is up to date) and packaged. The test
                       suite installs this way, so that CI does not compile the libraries a second time.
  conveyor-prefix=DIR  build python/ alone against conveyor installed in DIR (headers, static libraries,
                       CMake package), as on a machine without its dependencies' headers (the GPU machine:
                       scripts/pip_install_on_gpu_machine.sh)
  cmake.define.NAME=V  -DNAME=V for the configure step
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


def project_version():
    """The version in CMakeLists.txt's project() call, the one source of conveyor's version."""
    text = (ROOT / "CMakeLists.txt").read_text()
    found = re.search(r"project\(\s*conveyor\s+VERSION\s+([0-9][0-9.]*)", text)
    if not found:
        raise RuntimeError("conveyor: no 'project(conveyor VERSION x.y.z' in CMakeLists.txt")
    return found.group(1)


def build_base():
    """Where setuptools builds: inside the CMake folder named by build-dir (nothing written beside the
    sources then), else build-pip/ (ignored by git)."""
    named = os.environ.get("CONVEYOR_PIP_BUILD_DIR")
    base = pathlib.Path(named) / "pip" if named else ROOT / "build-pip"
    base.mkdir(parents=True, exist_ok=True)
    return str(base)


class CMakeBuild(build_ext):
    """Builds conveyor._conveyor with CMake and lays out the package in build_lib."""

    def build_extension(self, ext):
        if self.inplace:
            raise RuntimeError("conveyor: no editable install; after ./conveyor.sh build, "
                               "PYTHONPATH=build/python imports the build folder's package")
        build_dir = os.environ.get("CONVEYOR_PIP_BUILD_DIR")
        prefix = os.environ.get("CONVEYOR_PIP_PREFIX")
        defines = [line for line in os.environ.get("CONVEYOR_PIP_CMAKE_DEFINES", "").splitlines() if line]
        if build_dir:
            if prefix or defines:
                raise RuntimeError("conveyor: build-dir uses that folder's configuration as it is; "
                                   "conveyor-prefix and cmake.define.* do not apply to it")
            if not (pathlib.Path(build_dir) / "CMakeCache.txt").is_file():
                raise RuntimeError(f"conveyor: build-dir {build_dir} is not a configured CMake build folder")
        else:
            build_dir = str(pathlib.Path(self.build_temp).resolve() / "cmake")
            self.configure(build_dir, prefix, defines)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        # The module, and the data service's programs where the build has them (an empty target otherwise).
        self.spawn(["cmake", "--build", build_dir, "--target", "conveyor_python", "conveyor_python_programs",
                    "-j", jobs])
        package_root = pathlib.Path(self.build_lib).resolve()
        self.spawn(["cmake", "--install", build_dir, "--component", "python_package",
                    "--prefix", str(package_root)])
        module = package_root / self.get_ext_filename(ext.name)
        if not module.is_file():
            built = sorted(p.name for p in (package_root / "conveyor").glob("_conveyor*"))
            raise RuntimeError(f"conveyor: CMake built {built or 'no module'}, not {module.name}: the build "
                               f"folder's module is for another Python than {sys.executable}")

    def configure(self, build_dir, prefix, defines):
        if not shutil.which("cmake"):
            raise RuntimeError("conveyor: cmake is not installed (./conveyor.sh deps installs what is needed)")
        command = ["cmake", "-S", str(ROOT / "python" if prefix else ROOT), "-B", build_dir, "-Wno-dev",
                   "-DCMAKE_BUILD_TYPE=Release", f"-DPython3_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja") and not (pathlib.Path(build_dir) / "CMakeCache.txt").exists():
            command += ["-G", "Ninja"]
        if prefix:
            command += [f"-DCMAKE_PREFIX_PATH={prefix}"]
        else:
            # The libraries and the module only; built once, so in unity batches (CMakeLists.txt says why).
            command += ["-DCONVEYOR_TESTS=OFF", "-DCONVEYOR_BENCHMARKS=OFF", "-DCONVEYOR_EXAMPLES=OFF",
                        "-DCONVEYOR_DATA_TOOLS=OFF", "-DCONVEYOR_INSTALL=OFF", "-DCONVEYOR_PYTHON=ON",
                        "-DCONVEYOR_UNITY_BUILD=ON"]
        command += [f"-D{define}" for define in defines]
        self.spawn(command)


setup(
    version=project_version(),
    package_dir={"": "python"},
    packages=find_packages("python", include=["conveyor", "conveyor.*"]),
    ext_modules=[Extension("conveyor._conveyor", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": build_base()}, "egg_info": {"egg_base": build_base()}},
    zip_safe=False,
)
