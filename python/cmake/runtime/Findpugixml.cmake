# pugixml as a shared library: from CONVEYOR_RUNTIME_LIBRARY_DIR, else the system's (RuntimeLibrary.cmake).
# Makes pugixml::pugixml.
include(${CMAKE_CURRENT_LIST_DIR}/RuntimeLibrary.cmake)
conveyor_runtime_or_system_library(pugixml::pugixml pugixml PUGIXML_LIBRARY)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(pugixml REQUIRED_VARS PUGIXML_LIBRARY)
