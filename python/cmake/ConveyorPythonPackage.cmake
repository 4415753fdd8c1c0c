# The installable package (what pip puts into site-packages), laid out by
#   cmake --install BUILD --component python_package --prefix DIR
# as DIR/conveyor/: the Python files, the extension module, and in DIR/conveyor/_libs/ the shared libraries
# it needs that a bare system lacks (oneTBB, libjpeg-turbo, OpenCV and what it pulls, libarchive, libcurl,
# ...), found through the module's RPATH ($ORIGIN/_libs), so that the package imports where none of them is
# installed (the GPU machine). setup.py runs this; a plain `cmake --install` leaves it out (EXCLUDE_FROM_ALL).

# $ORIGIN first; then the CUDA runtime's folder, where a GPU build finds libcudart when no torch has loaded
# one (conveyor/__init__.py loads torch's first where torch is installed).
set(conveyor_package_rpath "$ORIGIN/_libs")
if(TARGET CUDA::cudart AND CUDAToolkit_LIBRARY_DIR)
  list(APPEND conveyor_package_rpath ${CUDAToolkit_LIBRARY_DIR})
endif()
set_target_properties(conveyor_python PROPERTIES INSTALL_RPATH "${conveyor_package_rpath}")

install(TARGETS conveyor_python LIBRARY DESTINATION conveyor COMPONENT python_package EXCLUDE_FROM_ALL)
# The data service's programs, where they are built (with the project): conveyor/_bin/, run by the commands
# conveyor-dispatcher, conveyor-worker and conveyor-service-status that pip installs (conveyor/_programs.py).
# They find the package's libraries from there ($ORIGIN/../_libs).
set(conveyor_package_programs)
foreach(program conveyor-dispatcher conveyor-worker conveyor-service-status)
  if(TARGET ${program})
    list(APPEND conveyor_package_programs ${program})
  endif()
endforeach()
add_custom_target(conveyor_python_programs)
if(conveyor_package_programs)
  add_dependencies(conveyor_python_programs ${conveyor_package_programs})
  install(TARGETS ${conveyor_package_programs} RUNTIME DESTINATION conveyor/_bin COMPONENT python_package
          EXCLUDE_FROM_ALL)
endif()
set(conveyor_program_files)
foreach(program ${conveyor_package_programs})
  list(APPEND conveyor_program_files "$<TARGET_FILE:${program}>")
endforeach()
install(DIRECTORY conveyor/ DESTINATION conveyor COMPONENT python_package EXCLUDE_FROM_ALL
        FILES_MATCHING PATTERN "*.py" PATTERN __pycache__ EXCLUDE)
# The libraries are found from the module in the build folder, whose RPATH still names where they lie.
install(CODE "set(CONVEYOR_MODULE \"$<TARGET_FILE:conveyor_python>\")
              set(CONVEYOR_PROGRAMS \"${conveyor_program_files}\")
              set(CONVEYOR_INSTALLED_MODULE \"\${CMAKE_INSTALL_PREFIX}/conveyor/$<TARGET_FILE_NAME:conveyor_python>\")
              set(CONVEYOR_LIBRARY_DIRS \"${CONVEYOR_RUNTIME_LIBRARY_DIR}\")
              include(\"${CMAKE_CURRENT_LIST_DIR}/BundleRuntimeLibraries.cmake\")"
        COMPONENT python_package EXCLUDE_FROM_ALL)
