# libspng as a shared library: from CONVEYOR_RUNTIME_LIBRARY_DIR, else the system's (RuntimeLibrary.cmake).
# Makes SPNG::spng.
include(${CMAKE_CURRENT_LIST_DIR}/RuntimeLibrary.cmake)
conveyor_runtime_or_system_library(SPNG::spng spng SPNG_LIBRARY)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SPNG REQUIRED_VARS SPNG_LIBRARY)
