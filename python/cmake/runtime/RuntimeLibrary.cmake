# Where conveyor's dependencies have no CMake package but their shared libraries lie in
# CONVEYOR_RUNTIME_LIBRARY_DIR (copied there by shared/tools/device-libs, as on the GPU machine), the Find
# modules of this folder make the imported targets conveyor's installed package links, from those files.
# They give no include directories: conveyor's public headers include none of these libraries' headers,
# except dlpack's, which is looked up on CMAKE_PREFIX_PATH.

# conveyor_runtime_library(TARGET NAME OUT_VAR): TARGET, an imported shared library, for the file
# lib<NAME>.so[.*] in CONVEYOR_RUNTIME_LIBRARY_DIR; OUT_VAR is that file, or <OUT_VAR>-NOTFOUND.
function(conveyor_runtime_library target name out_var)
  file(GLOB candidates "${CONVEYOR_RUNTIME_LIBRARY_DIR}/lib${name}.so" "${CONVEYOR_RUNTIME_LIBRARY_DIR}/lib${name}.so.*")
  if(NOT candidates)
    set(${out_var} ${out_var}-NOTFOUND PARENT_SCOPE)
    return()
  endif()
  list(SORT candidates)
  list(GET candidates 0 file)
  if(NOT TARGET ${target})
    add_library(${target} SHARED IMPORTED)
    set_target_properties(${target} PROPERTIES IMPORTED_LOCATION ${file})
  endif()
  set(${out_var} ${file} PARENT_SCOPE)
endfunction()

# conveyor_runtime_or_system_library(TARGET NAME OUT_VAR): as conveyor_runtime_library, else the system's
# shared library lib<NAME>.so (the GPU machine may have a library without its development files).
function(conveyor_runtime_or_system_library target name out_var)
  conveyor_runtime_library(${target} ${name} file)
  if(NOT file)
    find_library(${out_var} NAMES ${name})
    set(file ${${out_var}})
    if(file AND NOT TARGET ${target})
      add_library(${target} SHARED IMPORTED)
      set_target_properties(${target} PROPERTIES IMPORTED_LOCATION ${file})
    endif()
  endif()
  set(${out_var} ${file} PARENT_SCOPE)
endfunction()
