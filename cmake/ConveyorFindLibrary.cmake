# conveyor_find_library(NAME HEADER LIBRARY TARGET): a library that ships no CMake package of its own (cuDNN and
# NCCL, libnuma, libspng), found in the system's folders, beside the CUDA toolkit when one was found, or under
# $ENV{<NAME>_ROOT}, as the imported target TARGET; sets NAME_FOUND, NAME_INCLUDE_DIR and NAME_LIBRARY as a Find
# module does. A macro: a Find module's results belong to the scope that called find_package. Installed with
# the Find modules that use it, for static builds.
include(FindPackageHandleStandardArgs)
macro(conveyor_find_library name header library target)
  find_path(${name}_INCLUDE_DIR ${header} HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV ${name}_ROOT PATH_SUFFIXES include)
  find_library(${name}_LIBRARY ${library} HINTS ${CUDAToolkit_LIBRARY_DIR} ENV ${name}_ROOT
               PATH_SUFFIXES lib lib64)
  find_package_handle_standard_args(${name} REQUIRED_VARS ${name}_LIBRARY ${name}_INCLUDE_DIR)
  if(${name}_FOUND AND NOT TARGET ${target})
    add_library(${target} UNKNOWN IMPORTED)
    set_target_properties(${target} PROPERTIES IMPORTED_LOCATION "${${name}_LIBRARY}"
                                               INTERFACE_INCLUDE_DIRECTORIES "${${name}_INCLUDE_DIR}")
  endif()
  mark_as_advanced(${name}_INCLUDE_DIR ${name}_LIBRARY)
endmacro()
