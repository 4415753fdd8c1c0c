# normalize (CPU and CUDA twins). Included from ops/nn/CMakeLists.txt so that ops/image/CMakeLists.txt,
# owned with the other image ops, needs no change.
target_sources(conveyor PRIVATE ${CMAKE_CURRENT_LIST_DIR}/normalize.cpp)
if(CONVEYOR_WITH_CUDA)
  target_sources(conveyor PRIVATE ${CMAKE_CURRENT_LIST_DIR}/normalize.cu)
endif()
