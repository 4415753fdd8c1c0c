# libarchive as a shared library: from CONVEYOR_RUNTIME_LIBRARY_DIR, else the system's (RuntimeLibrary.cmake).
# Makes LibArchive::LibArchive.
include(${CMAKE_CURRENT_LIST_DIR}/RuntimeLibrary.cmake)
conveyor_runtime_or_system_library(LibArchive::LibArchive archive LibArchive_LIBRARY)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LibArchive REQUIRED_VARS LibArchive_LIBRARY)
