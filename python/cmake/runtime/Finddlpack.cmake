# dlpack's header (conveyor's public headers include <dlpack/dlpack.h>), from CMAKE_PREFIX_PATH: the bundle
# of scripts/device-bundle.sh --python puts the one conveyor was built with into its prefix. dlpack::dlpack.
find_path(dlpack_INCLUDE_DIR dlpack/dlpack.h)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(dlpack REQUIRED_VARS dlpack_INCLUDE_DIR)
if(dlpack_FOUND AND NOT TARGET dlpack::dlpack)
  add_library(dlpack::dlpack INTERFACE IMPORTED)
  set_target_properties(dlpack::dlpack PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${dlpack_INCLUDE_DIR})
endif()
