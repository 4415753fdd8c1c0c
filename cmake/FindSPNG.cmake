# libspng (Debian's libspng-dev ships no CMake package): makes SPNG::spng from its header and library.
include(${CMAKE_CURRENT_LIST_DIR}/ConveyorFindLibrary.cmake)
conveyor_find_library(SPNG spng.h spng SPNG::spng)
