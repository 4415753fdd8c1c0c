"""`pip install` of the package into a fresh virtual environment, used from another directory (CTest:
python_pip_install).

The package is built from this build folder (pip's config setting build-dir, see setup.py): the libraries
are compiled once for the whole suite, and CI's time goes to checking the install, not to compiling them
again. What the README's plain `pip install` adds, the configure step of its own build folder, is the same
CMake project; its time on the build machine is measured in bench/results/ (the *-pip-install folder).
CONVEYOR_BUILD_DIR names the build folder (CTest sets it). Nothing is written into the source tree.
"""
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
# Those the module links (the linker drops the TurboJPEG library: the decoder uses libjpeg's API), and one
# each pulls in (OpenCV's LAPACK, libcurl's TLS).
LIBRARIES = ("libtbb", "libjpeg", "libopencv_core", "libopencv_imgproc", "libarchive", "libcurl", "liblapack",
             "libssl")


def run(command, cwd, timeout=600):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    for name in ("PYTHONPATH", "LD_LIBRARY_PATH"):  # only the venv and the module's RPATH count
        env.pop(name, None)
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A venv with the system's packages visible (numpy), conveyor pip-installed into it."""
    build = os.environ.get("CONVEYOR_BUILD_DIR")
    assert build, "CONVEYOR_BUILD_DIR (the CMake build folder to package) is not set"
    root = tmp_path_factory.mktemp("pip")
    run([sys.executable, "-m", "venv", "--system-site-packages", str(root / "venv")], cwd=root)
    python = root / "venv" / "bin" / "python"
    run([str(python), "-m", "pip", "install", "--no-build-isolation", "--no-index", "--quiet",
         "--config-settings", f"build-dir={build}", str(REPO)], cwd=root)
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    return python, elsewhere


def installed(python, cwd, code):
    return run([str(python), "-c", textwrap.dedent(code)], cwd=cwd)


def project_version():
    return re.search(r"project\(\s*conveyor\s+VERSION\s+([0-9.]+)", (REPO / "CMakeLists.txt").read_text()).group(1)


def test_the_installed_package_imports_from_another_directory_with_the_project_version(venv):
    python, elsewhere = venv
    printed = installed(python, elsewhere, """
        import conveyor, sys
        print(conveyor.__file__); print(conveyor.__version__); print(sys.prefix)""").split("\n")
    where, version, prefix = printed[:3]
    assert where.startswith(prefix) and "site-packages" in where, where
    assert version == project_version()


def test_batches_of_a_small_folder_reach_numpy_through_dlpack(venv, image_folder):
    python, elsewhere = venv
    printed = installed(python, elsewhere, f"""
        import conveyor, numpy
        ds = (conveyor.Dataset.image_folder({str(image_folder)!r})
              .map(conveyor.ops.decode_random_resized_crop(32))
              .with_options(threads=2, seed=3).batch(8))
        for batch in ds:
            images, labels = numpy.from_dlpack(batch.images), numpy.from_dlpack(batch.labels)
            print(images.shape, images.dtype, set(labels.tolist()) <= {{0, 1, 2}})""")
    assert printed.splitlines() == ["(8, 32, 32, 3) uint8 True"] * 3  # 24 images in batches of 8


def test_the_libraries_it_needs_are_in_the_package_and_found_through_its_rpath(venv):
    python, elsewhere = venv
    module = installed(python, elsewhere, "import conveyor._conveyor as m; print(m.__file__)").strip()
    libs = pathlib.Path(module).parent / "_libs"
    assert "$ORIGIN/_libs" in run(["readelf", "-d", module], cwd=elsewhere)
    resolved = {}
    for line in run(["ldd", module], cwd=elsewhere).splitlines():
        assert "not found" not in line, line
        if "=>" in line:
            name, path = line.split("=>")
            resolved[name.strip()] = path.split("(")[0].strip()
    for library in LIBRARIES:
        # Renamed with a digest of the copy (libtbb-1a2b3c4d.so.12), as auditwheel does.
        names = [name for name in resolved if re.fullmatch(re.escape(library) + r"-[0-9a-f]{8}\.so(\..*)?", name)]
        assert names, f"the module does not need {library}, or not under a renamed copy? {sorted(resolved)}"
        for name in names:
            assert pathlib.Path(resolved[name]).parent == libs, f"{name} resolves to {resolved[name]}"
    # The module exports its init function alone (python/CMakeLists.txt): nothing of it stands in for
    # libstdc++'s or any other library's symbols in the process.
    exported = run(["nm", "-D", "--defined-only", module], cwd=elsewhere).split()
    assert exported[1:] == ["T", "PyInit__conveyor"], exported
    for copy in libs.iterdir():
        soname = re.search(r"\(SONAME\)\s+Library soname: \[(.*)\]", run(["readelf", "-d", str(copy)], cwd=elsewhere))
        assert soname and soname.group(1) == copy.name, f"{copy.name}: soname {soname and soname.group(1)}"


def test_a_library_of_the_system_loaded_after_conveyor_is_the_systems_own(venv):
    """The package's copies serve only the package: a later library asking for libtbb.so.12 (torch, Python's
    own _ssl asking for libssl.so.3) gets the system's, not conveyor's copy, which may come from another
    distribution than the system's (python/cmake/BundleRuntimeLibraries.cmake)."""
    python, elsewhere = venv
    printed = installed(python, elsewhere, """
        import conveyor, ctypes
        for name in ("libtbb.so.12", "libssl.so.3"):
            ctypes.CDLL(name)
        for line in sorted({line.split()[-1] for line in open("/proc/self/maps") if "libtbb" in line or "libssl" in line}):
            print(line)""").split()
    libs = [line for line in printed if "/conveyor/_libs/" in line]
    system = [line for line in printed if "/conveyor/_libs/" not in line]
    assert sorted(pathlib.Path(line).name.split("-")[0] for line in libs) == ["libssl", "libtbb"], printed
    names = sorted(pathlib.Path(line).name for line in system)  # libtbb.so.12 is a link to libtbb.so.12.N
    assert len(names) == 2 and names[0].startswith("libssl.so.3") and names[1].startswith("libtbb.so.12"), printed


def test_the_data_service_programs_come_with_the_package_and_run_from_it(venv):
    """conveyor-dispatcher, conveyor-worker and conveyor-service-status: commands in the venv that run the
    programs the package carries, their libraries found in the package's _libs."""
    python, elsewhere = venv
    for command in ("conveyor-dispatcher", "conveyor-worker", "conveyor-service-status"):
        help_text = run([str(python.parent / command), "--help"], cwd=elsewhere)
        assert command in help_text, help_text
        program = pathlib.Path(installed(python, elsewhere, "import conveyor; print(conveyor.__file__)").strip())
        program = program.parent / "_bin" / command
        for line in run(["ldd", str(program)], cwd=elsewhere).splitlines():
            assert "not found" not in line, line
