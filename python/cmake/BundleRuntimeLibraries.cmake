# Install-time script (ConveyorPythonPackage.cmake): copies the shared libraries CONVEYOR_MODULE needs, and
# theirs, into <prefix>/conveyor/_libs, each under the name the loader asks for (its soname) and as a file,
# not a symbolic link (a wheel is a zip, which keeps none).
# Left out, as shared/tools/device-libs leaves them out of what travels to the GPU machine: the C and C++
# runtimes (every Linux has them, and a second copy in one process breaks it) and the CUDA libraries (the
# driver's, and the runtime the user's CUDA or PyTorch installation provides: a process must share one).
# CONVEYOR_LIBRARY_DIRS: folders to search besides the module's RPATH and the system's.
file(GET_RUNTIME_DEPENDENCIES
  LIBRARIES "${CONVEYOR_MODULE}"
  RESOLVED_DEPENDENCIES_VAR resolved
  UNRESOLVED_DEPENDENCIES_VAR unresolved
  CONFLICTING_DEPENDENCIES_PREFIX conflicting
  PRE_EXCLUDE_REGEXES
    "^(linux-vdso|ld-linux)"
    "^lib(c|m|dl|rt|pthread|util|resolv|anl|nsl)\\.so"
    "^lib(stdc\\+\\+|gcc_s)\\.so"
    "^lib(cuda|cudart|cudnn|cudnn_.*|cublas|cublasLt|nvjpeg|nccl|curand|cufft|nvrtc|nvJitLink)\\.so"
  DIRECTORIES ${CONVEYOR_LIBRARY_DIRS})
if(unresolved)
  message(FATAL_ERROR "conveyor: the Python module needs libraries that were not found: ${unresolved}")
endif()
# A library found both in CONVEYOR_LIBRARY_DIRS and in the system's folders (OpenCV's BLAS, say): the copy
# in CONVEYOR_LIBRARY_DIRS, which the module's DT_RPATH makes the loader take first.
foreach(name ${conflicting_FILENAMES})
  set(chosen "")
  foreach(candidate ${conflicting_${name}})
    get_filename_component(folder "${candidate}" DIRECTORY)
    list(FIND CONVEYOR_LIBRARY_DIRS "${folder}" at)  # not IN_LIST: an install script runs at old policies
    if(NOT chosen AND at GREATER -1)
      set(chosen "${candidate}")
    endif()
  endforeach()
  if(NOT chosen)
    list(GET conflicting_${name} 0 chosen)
  endif()
  list(APPEND resolved "${chosen}")
endforeach()
set(destination "${CMAKE_INSTALL_PREFIX}/conveyor/_libs")
file(MAKE_DIRECTORY "${destination}")
foreach(library ${resolved})
  get_filename_component(name "${library}" NAME)
  file(REAL_PATH "${library}" file)
  message(STATUS "Bundling: ${destination}/${name}")
  file(COPY_FILE "${file}" "${destination}/${name}" ONLY_IF_DIFFERENT)
endforeach()
