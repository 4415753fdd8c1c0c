# oneTBB as a shared library in CONVEYOR_RUNTIME_LIBRARY_DIR (RuntimeLibrary.cmake): TBB::tbb.
include(${CMAKE_CURRENT_LIST_DIR}/RuntimeLibrary.cmake)
conveyor_runtime_library(TBB::tbb tbb TBB_LIBRARY)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(TBB REQUIRED_VARS TBB_LIBRARY)
