# FindNCCL: NCCL beside the CUDA toolkit, in the system's folders (Debian/Ubuntu's libnccl-dev) or under
# NCCL_ROOT, as the imported target NCCL::nccl. NCCL ships no CMake package of its own. Installed with
# conveyor's package for static builds.
include(${CMAKE_CURRENT_LIST_DIR}/ConveyorFindLibrary.cmake)
conveyor_find_library(NCCL nccl.h nccl NCCL::nccl)
