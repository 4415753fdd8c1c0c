# libinih's INIReader as shared libraries: from CONVEYOR_RUNTIME_LIBRARY_DIR, else the system's
# (RuntimeLibrary.cmake). Makes INIReader::INIReader (with inih, which it calls).
include(${CMAKE_CURRENT_LIST_DIR}/RuntimeLibrary.cmake)
conveyor_runtime_or_system_library(INIReader::inih inih INIH_LIBRARY)
conveyor_runtime_or_system_library(INIReader::INIReader INIReader INIREADER_LIBRARY)
if(TARGET INIReader::INIReader AND TARGET INIReader::inih)
  set_target_properties(INIReader::INIReader PROPERTIES INTERFACE_LINK_LIBRARIES INIReader::inih)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(INIReader REQUIRED_VARS INIREADER_LIBRARY INIH_LIBRARY)
