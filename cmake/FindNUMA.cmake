# libnuma (Debian's libnuma-dev ships no CMake package): makes NUMA::numa from its header and library. The
# device wing reads CPU lists and binds page-locked memory to a GPU's NUMA node with it.
include(${CMAKE_CURRENT_LIST_DIR}/ConveyorFindLibrary.cmake)
conveyor_find_library(NUMA numa.h numa NUMA::numa)
