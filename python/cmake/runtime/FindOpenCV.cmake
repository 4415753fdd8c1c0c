# OpenCV's core and imgproc as shared libraries in CONVEYOR_RUNTIME_LIBRARY_DIR (RuntimeLibrary.cmake): the
# targets opencv_core and opencv_imgproc, named as OpenCV's own package names them.
include(${CMAKE_CURRENT_LIST_DIR}/RuntimeLibrary.cmake)
conveyor_runtime_library(opencv_core opencv_core OpenCV_CORE_LIBRARY)
conveyor_runtime_library(opencv_imgproc opencv_imgproc OpenCV_IMGPROC_LIBRARY)
set(OpenCV_INCLUDE_DIRS "")
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OpenCV REQUIRED_VARS OpenCV_CORE_LIBRARY OpenCV_IMGPROC_LIBRARY)
