# libarchive as a shared library: from CONVEYOR_RUNTIME_LIBRARY_DIR (RuntimeLibrary.cmake), else the system's
# (the GPU machine may have the library without its headers). Makes LibArchive::LibArchive.
include(${CMAKE_CURRENT_LIST_DIR}/RuntimeLibrary.cmake)
conveyor_runtime_library(LibArchive::LibArchive archive LibArchive_LIBRARY)
if(NOT LibArchive_LIBRARY)
  find_library(LibArchive_LIBRARY NAMES archive libarchive.so.13)
  if(LibArchive_LIBRARY AND NOT TARGET LibArchive::LibArchive)
    add_library(LibArchive::LibArchive SHARED IMPORTED)
    set_target_properties(LibArchive::LibArchive PROPERTIES IMPORTED_LOCATION ${LibArchive_LIBRARY})
  endif()
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LibArchive REQUIRED_VARS LibArchive_LIBRARY)
