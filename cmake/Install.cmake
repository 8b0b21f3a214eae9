# What `cmake --install BUILD --prefix P` puts in P: the tools, libdynb,
# the Engine's public headers and a CMake package, so an application does
#   find_package(dynb CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE dynb::Engine)
# (examples/standalone; docs/api.md, "Installing").
include(CMakePackageConfigHelpers)

install(TARGETS dynbc dynb-opt sst2dynb
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(TARGETS DynbShared EXPORT dynbTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The public headers: the Engine's and what they include, nothing from the
# build tree (tests/e2e/install.test compiles every one on its own against
# the prefix).
set(DYNB_PUBLIC_HEADERS
  compiler/include/dynb/Batching/BatchingGraph.h
  compiler/include/dynb/Batching/Scheduler.h
  compiler/include/dynb/Engine/Batch.h
  compiler/include/dynb/Engine/Engine.h
  compiler/include/dynb/Engine/MicroBatcher.h
  compiler/include/dynb/Engine/ModelBuilder.h
  compiler/include/dynb/Engine/Results.h
  compiler/include/dynb/Engine/Task.h
  compiler/include/dynb/Engine/Version.h
  compiler/include/dynb/JIT/KernelObjectStore.h
  dialects/include/dynb/Dialect/ElementwiseKind.h
  dialects/include/dynb/Dialect/ElementwiseOps.def
  runtime/include/dynb/Runtime/ParameterStore.h
  runtime/include/dynb/Runtime/Status.h
)
foreach(header ${DYNB_PUBLIC_HEADERS})
  string(REGEX REPLACE "^[a-z]+/include/" "" relative ${header})
  get_filename_component(dir ${relative} DIRECTORY)
  install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${dir})
endforeach()

set(DYNB_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/dynb)
install(EXPORT dynbTargets NAMESPACE dynb:: DESTINATION ${DYNB_PACKAGE_DIR})
configure_package_config_file(cmake/dynbConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/dynbConfig.cmake
  INSTALL_DESTINATION ${DYNB_PACKAGE_DIR})
# Minor versions may change the API until 1.0.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/dynbConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/dynbConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/dynbConfigVersion.cmake
  DESTINATION ${DYNB_PACKAGE_DIR})
