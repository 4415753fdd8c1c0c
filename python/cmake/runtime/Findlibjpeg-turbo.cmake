# libjpeg-turbo's two libraries as shared libraries in CONVEYOR_RUNTIME_LIBRARY_DIR (RuntimeLibrary.cmake):
# libjpeg-turbo::turbojpeg and libjpeg-turbo::jpeg.
include(${CMAKE_CURRENT_LIST_DIR}/RuntimeLibrary.cmake)
conveyor_runtime_library(libjpeg-turbo::turbojpeg turbojpeg libjpeg-turbo_TURBOJPEG_LIBRARY)
conveyor_runtime_library(libjpeg-turbo::jpeg jpeg libjpeg-turbo_JPEG_LIBRARY)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(libjpeg-turbo
                                  REQUIRED_VARS libjpeg-turbo_TURBOJPEG_LIBRARY libjpeg-turbo_JPEG_LIBRARY)
