# libnuma as a shared library: from CONVEYOR_RUNTIME_LIBRARY_DIR, else the system's (RuntimeLibrary.cmake).
# Makes NUMA::numa.
include(${CMAKE_CURRENT_LIST_DIR}/RuntimeLibrary.cmake)
conveyor_runtime_or_system_library(NUMA::numa numa NUMA_LIBRARY)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NUMA REQUIRED_VARS NUMA_LIBRARY)
