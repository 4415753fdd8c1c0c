# FindCUDNN: cuDNN beside the CUDA toolkit (or under CUDNN_ROOT), as the imported target CUDNN::cudnn.
# cuDNN ships no CMake package of its own. Installed with conveyor's package for static builds.
include(${CMAKE_CURRENT_LIST_DIR}/ConveyorFindLibrary.cmake)
conveyor_find_library(CUDNN cudnn.h cudnn CUDNN::cudnn)
