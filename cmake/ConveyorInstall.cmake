# Install rules: headers, the libraries, a CMake package (find_package(conveyor 0.2 COMPONENTS data cuda train
# service)) and pkg-config files (conveyor, conveyor-cuda, conveyor-train, conveyor-service).
include(CMakePackageConfigHelpers)
set(CONVEYOR_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/conveyor)

set(conveyor_wings conveyor_data conveyor_cuda conveyor_train)
if(CONVEYOR_WITH_SERVICE)
  list(APPEND conveyor_wings conveyor_service)
endif()
install(TARGETS ${conveyor_wings} conveyor EXPORT conveyorTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The CUDA-only header is installed only where it can be used.
set(cuda_only_headers)
if(NOT CONVEYOR_WITH_CUDA)
  set(cuda_only_headers PATTERN "stream.h" EXCLUDE)
endif()
install(DIRECTORY include/conveyor DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h"
        ${cuda_only_headers})
install(FILES ${PROJECT_BINARY_DIR}/include/conveyor/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/conveyor)

install(EXPORT conveyorTargets NAMESPACE conveyor:: DESTINATION ${CONVEYOR_CMAKE_DIR})
configure_package_config_file(cmake/conveyorConfig.cmake.in ${PROJECT_BINARY_DIR}/conveyorConfig.cmake
                              INSTALL_DESTINATION ${CONVEYOR_CMAKE_DIR})
# 0.x: a minor version may break the API, so 0.2 accepts 0.2.* only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/conveyorConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/conveyorConfig.cmake ${PROJECT_BINARY_DIR}/conveyorConfigVersion.cmake
              cmake/FindCUDNN.cmake cmake/FindNCCL.cmake cmake/ConveyorFindLibrary.cmake
              cmake/FindSPNG.cmake cmake/FindINIReader.cmake cmake/FindNUMA.cmake
        DESTINATION ${CONVEYOR_CMAKE_DIR})

# pkg-config: static archives need their dependencies listed (pkg-config --static); shared ones do not.
if(CONVEYOR_WITH_CUDA)
  set(CONVEYOR_PC_CUDA_CFLAGS "-I${CUDAToolkit_INCLUDE_DIRS}")
  set(CONVEYOR_PC_CUDA_LIBS "-L${CUDAToolkit_LIBRARY_DIR} -lcudart")
  get_filename_component(cudnn_dir ${CUDNN_LIBRARY} DIRECTORY)
  get_filename_component(nccl_dir ${NCCL_LIBRARY} DIRECTORY)
  set(CONVEYOR_PC_TRAIN_LIBS "-L${CUDAToolkit_LIBRARY_DIR} -lcublas -L${cudnn_dir} -lcudnn -L${nccl_dir} -lnccl")
endif()
# Relocatable: the prefix is found from where the .pc file lies, so `cmake --install --prefix` anywhere works.
file(RELATIVE_PATH CONVEYOR_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" CONVEYOR_PC_TO_PREFIX "${CONVEYOR_PC_TO_PREFIX}")
set(conveyor_pcs conveyor conveyor-cuda conveyor-train)
if(CONVEYOR_WITH_SERVICE)
  list(APPEND conveyor_pcs conveyor-service)
endif()
foreach(pc ${conveyor_pcs})
  configure_file(cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
