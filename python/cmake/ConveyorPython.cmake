# conveyor_find_python(FOUND_VAR): finds the Python interpreter and headers the module is built for, and
# pybind11; FOUND_VAR is TRUE when all three are there (a STATUS message says what is missing when not).
# A macro: FindPython's and pybind11's results must reach the caller's scope. Caches
# CONVEYOR_PYTHON_EXECUTABLE for the tests.
#
# Which interpreter: FindPython takes the first python3 on the PATH. Where another interpreter without
# numpy shadows the system's (a pyenv shim, say), the module would be built for a Python that cannot run
# its tests. So, unless Python3_EXECUTABLE is given, the first python3 on the PATH that imports numpy is
# taken (find_program's VALIDATOR, CMake >= 3.25), and FindPython's own choice otherwise.
function(conveyor_python_imports_numpy result candidate)
  execute_process(COMMAND ${candidate} -c "import numpy" RESULT_VARIABLE status OUTPUT_QUIET ERROR_QUIET
                  TIMEOUT 60)
  if(NOT status EQUAL 0)
    set(${result} FALSE PARENT_SCOPE)
  endif()
endfunction()

macro(conveyor_find_python found_var)
  set(${found_var} FALSE)
  if(NOT Python3_EXECUTABLE AND CMAKE_VERSION VERSION_GREATER_EQUAL 3.25)
    find_program(CONVEYOR_PYTHON_WITH_NUMPY NAMES python3 VALIDATOR conveyor_python_imports_numpy
                 DOC "The first python3 on the PATH that imports numpy")
    if(CONVEYOR_PYTHON_WITH_NUMPY)
      set(Python3_EXECUTABLE ${CONVEYOR_PYTHON_WITH_NUMPY} CACHE FILEPATH "The Python the module is built for")
    endif()
  endif()
  find_package(Python3 COMPONENTS Interpreter Development.Module)
  if(NOT Python3_Interpreter_FOUND OR NOT Python3_Development.Module_FOUND)
    message(STATUS "conveyor: Python module not built: no Python 3 interpreter with its development headers "
                   "(Debian: python3-dev)")
  else()
    # Debian's pybind11-dev installs a CMake package; pip's pybind11 tells where its own is.
    # No version asked of find_package (a version file accepting only its own major version would refuse
    # pip's pybind11 3); the minimum is checked below.
    find_package(pybind11 CONFIG QUIET)
    if(NOT pybind11_FOUND)
      execute_process(COMMAND ${Python3_EXECUTABLE} -m pybind11 --cmakedir OUTPUT_VARIABLE conveyor_pybind11_dir
                      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(conveyor_pybind11_dir)
        find_package(pybind11 CONFIG QUIET HINTS ${conveyor_pybind11_dir} NO_DEFAULT_PATH)
      endif()
    endif()
    if(pybind11_FOUND AND pybind11_VERSION VERSION_LESS 2.10)
      message(STATUS "conveyor: Python module not built: pybind11 ${pybind11_VERSION} is older than 2.10")
      set(pybind11_FOUND FALSE)
    elseif(NOT pybind11_FOUND)
      message(STATUS "conveyor: Python module not built: pybind11 not found (Debian: pybind11-dev; pip: pybind11)")
    else()
      set(CONVEYOR_PYTHON_EXECUTABLE ${Python3_EXECUTABLE} CACHE INTERNAL "The Python the module is built for")
      message(STATUS "conveyor: Python module for ${Python3_EXECUTABLE} (${Python3_VERSION}), "
                     "pybind11 ${pybind11_VERSION}")
      set(${found_var} TRUE)
    endif()
  endif()
endmacro()
