"""conveyor's PEP 517 build backend: setuptools' own (setup.py runs CMake), with pip's --config-settings
handed to setup.py, which setuptools alone would drop (it reads only its --build-option and
--global-option). The settings are documented in pyproject.toml; setup.py reads them from the
environment variables named in SETTINGS, set only while one backend call runs.
"""
import contextlib
import os

from setuptools import build_meta as _setuptools
# The source distribution takes no settings. No editable hooks: the module is built by CMake into a build
# folder, which PYTHONPATH=build/python uses as it is (./conveyor.sh build).
from setuptools.build_meta import build_sdist, get_requires_for_build_sdist  # noqa: F401

# config setting -> environment variable setup.py reads
SETTINGS = {"build-dir": "CONVEYOR_PIP_BUILD_DIR", "conveyor-prefix": "CONVEYOR_PIP_PREFIX"}
DEFINE = "cmake.define."
DEFINES_VARIABLE = "CONVEYOR_PIP_CMAKE_DEFINES"  # NAME=VALUE lines


def _split(config_settings):
    """(ours as environment variables, the rest for setuptools); an unknown key is an error, not ignored."""
    ours, rest, defines = {}, {}, []
    for key, value in (config_settings or {}).items():
        if key in SETTINGS:
            ours[SETTINGS[key]] = os.path.abspath(os.path.expanduser(value))
        elif key.startswith(DEFINE):
            defines.append(f"{key[len(DEFINE):]}={value}")
        elif key.startswith("-") or key in ("verbose", "quiet"):
            rest[key] = value  # setuptools' own
        else:
            raise ValueError(f"conveyor: unknown config setting '{key}' (known: {', '.join(SETTINGS)}, "
                             f"{DEFINE}NAME; see pyproject.toml)")
    if defines:
        ours[DEFINES_VARIABLE] = "\n".join(defines)
    return ours, rest


@contextlib.contextmanager
def _settings(config_settings):
    ours, rest = _split(config_settings)
    saved = {name: os.environ.get(name) for name in list(SETTINGS.values()) + [DEFINES_VARIABLE]}
    os.environ.update(ours)
    try:
        yield rest
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with _settings(config_settings) as rest:
        return _setuptools.build_wheel(wheel_directory, rest, metadata_directory)


def get_requires_for_build_wheel(config_settings=None):
    with _settings(config_settings) as rest:
        return _setuptools.get_requires_for_build_wheel(rest)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    with _settings(config_settings) as rest:
        return _setuptools.prepare_metadata_for_build_wheel(metadata_directory, rest)
