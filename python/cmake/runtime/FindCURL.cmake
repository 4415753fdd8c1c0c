# libcurl as a shared library: from CONVEYOR_RUNTIME_LIBRARY_DIR (RuntimeLibrary.cmake), else the system's
# (the GPU machine may have the library without its headers). Makes CURL::libcurl.
include(${CMAKE_CURRENT_LIST_DIR}/RuntimeLibrary.cmake)
conveyor_runtime_library(CURL::libcurl curl CURL_LIBRARY)
if(NOT CURL_LIBRARY)
  find_library(CURL_LIBRARY NAMES curl libcurl.so.4)
  if(CURL_LIBRARY AND NOT TARGET CURL::libcurl)
    add_library(CURL::libcurl SHARED IMPORTED)
    set_target_properties(CURL::libcurl PROPERTIES IMPORTED_LOCATION ${CURL_LIBRARY})
  endif()
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CURL REQUIRED_VARS CURL_LIBRARY)
