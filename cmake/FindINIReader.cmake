# libinih's C++ INIReader (Debian's libinih-dev ships pkg-config files, no CMake package): makes
# INIReader::INIReader from its header and its two libraries (INIReader on top of inih).
find_path(INIREADER_INCLUDE_DIR INIReader.h)
find_library(INIREADER_LIBRARY NAMES INIReader)
find_library(INIH_LIBRARY NAMES inih)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(INIReader REQUIRED_VARS INIREADER_LIBRARY INIH_LIBRARY INIREADER_INCLUDE_DIR)
if(INIReader_FOUND AND NOT TARGET INIReader::INIReader)
  add_library(INIReader::INIReader UNKNOWN IMPORTED)
  set_target_properties(INIReader::INIReader PROPERTIES IMPORTED_LOCATION ${INIREADER_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${INIREADER_INCLUDE_DIR}
                        INTERFACE_LINK_LIBRARIES ${INIH_LIBRARY})
endif()
mark_as_advanced(INIREADER_INCLUDE_DIR INIREADER_LIBRARY INIH_LIBRARY)
