# Install-time script (ConveyorPythonPackage.cmake): copies the shared libraries CONVEYOR_MODULE needs, and
# theirs, into <prefix>/conveyor/_libs as files, not symbolic links (a wheel is a zip, which keeps none),
# each renamed with a digest of its contents the way auditwheel does (libssl.so.3 -> libssl-1a2b3c4d.so.3):
# its soname set to that name, and the installed module's and the other copies' entries for it rewritten
# (patchelf). A process keeps the first library of a name it loads and hands it to every later library
# that asks for that name: under its own name, a copy made on one distribution (Debian's, in a package
# installed on the GPU machine's Ubuntu) would serve Python's _ssl and torch too, in place of the system's.
# Renamed, the package's copies serve only the package. Each copy's RPATH is $ORIGIN: they find each other.
# Left out, as shared/tools/device-libs leaves them out of what travels to the GPU machine: the C and C++
# runtimes (every Linux has them, and a second copy in one process breaks it) and the CUDA libraries (the
# driver's, and the runtime the user's CUDA or PyTorch installation provides: a process must share one).
# CONVEYOR_LIBRARY_DIRS: folders to search besides the module's RPATH and the system's.
# The programs of conveyor/_bin/ (CONVEYOR_PROGRAMS, where the package has them) need theirs too.
set(conveyor_executables)
if(CONVEYOR_PROGRAMS)
  set(conveyor_executables EXECUTABLES ${CONVEYOR_PROGRAMS})
endif()
file(GET_RUNTIME_DEPENDENCIES
  LIBRARIES "${CONVEYOR_MODULE}"
  ${conveyor_executables}
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
find_program(CONVEYOR_PATCHELF patchelf)
if(NOT CONVEYOR_PATCHELF)
  message(FATAL_ERROR "conveyor: the Python package's libraries are renamed with patchelf, which is not "
                      "installed (Debian: apt-get install patchelf; ./conveyor.sh deps installs it)")
endif()
set(destination "${CMAKE_INSTALL_PREFIX}/conveyor/_libs")
file(REMOVE_RECURSE "${destination}")  # no copy of an earlier install under another digest
file(MAKE_DIRECTORY "${destination}")
set(copies "")
set(replacements "")  # --replace-needed OLD NEW, for every copy
foreach(library ${resolved})
  get_filename_component(name "${library}" NAME)
  file(REAL_PATH "${library}" file)
  file(SHA256 "${file}" digest)
  string(SUBSTRING "${digest}" 0 8 digest)
  string(REGEX REPLACE "^(.*)\\.so(\\..*)?$" "\\1-${digest}.so\\2" renamed "${name}")
  message(STATUS "Bundling: ${destination}/${renamed} (${name})")
  file(COPY_FILE "${file}" "${destination}/${renamed}")
  list(APPEND copies "${destination}/${renamed}")
  list(APPEND replacements --replace-needed "${name}" "${renamed}")
endforeach()
function(conveyor_patchelf)
  execute_process(COMMAND "${CONVEYOR_PATCHELF}" ${ARGN} RESULT_VARIABLE failed ERROR_VARIABLE error)
  if(failed)
    message(FATAL_ERROR "conveyor: patchelf ${ARGN} failed: ${error}")
  endif()
endfunction()
foreach(copy ${copies})
  get_filename_component(renamed "${copy}" NAME)
  # Copied from the system's folders, read-only for all but root: writable for patchelf.
  file(CHMOD "${copy}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  # One change per call: patchelf 0.14 (Debian 12's) mixes up the string table when one call changes the
  # soname and other entries together.
  conveyor_patchelf(${replacements} "${copy}")
  conveyor_patchelf(--set-soname "${renamed}" "${copy}")
  conveyor_patchelf(--set-rpath "$ORIGIN" "${copy}")
endforeach()
if(replacements)
  conveyor_patchelf(${replacements} "${CONVEYOR_INSTALLED_MODULE}")
endif()
foreach(program ${CONVEYOR_PROGRAMS})
  get_filename_component(name "${program}" NAME)
  set(installed "${CMAKE_INSTALL_PREFIX}/conveyor/_bin/${name}")
  file(CHMOD "${installed}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ
                                        WORLD_EXECUTE)
  if(replacements)
    conveyor_patchelf(${replacements} "${installed}")
  endif()
  conveyor_patchelf(--set-rpath "$ORIGIN/../_libs" "${installed}")
endforeach()
