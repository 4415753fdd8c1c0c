# libcurl as a shared library: from CONVEYOR_RUNTIME_LIBRARY_DIR, else the system's (RuntimeLibrary.cmake).
# Makes CURL::libcurl.
include(${CMAKE_CURRENT_LIST_DIR}/RuntimeLibrary.cmake)
conveyor_runtime_or_system_library(CURL::libcurl curl CURL_LIBRARY)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CURL REQUIRED_VARS CURL_LIBRARY)
