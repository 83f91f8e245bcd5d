# `cmake --install build --prefix P` (docs/install.md):
#   P/bin/tessera                 the solver; runs from any directory
#   P/lib/libtessera_*.a          one static library per module, exported as Tessera::<module>
#   P/include/tessera/            the public headers
#   P/lib/cmake/Tessera/          TesseraConfig.cmake for find_package(Tessera)
#   P/share/tessera/              cases (with their data), meshes, the Slurm template, the
#                                 reference solvers and plotting tools
set(tessera_modules core expr geometry nn autodiff partition physics parallel io train app)
set(tessera_module_targets)
foreach(module IN LISTS tessera_modules)
  list(APPEND tessera_module_targets tessera_${module})
endforeach()

install(TARGETS tessera RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ${tessera_module_targets} EXPORT TesseraTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tessera DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(tessera_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)
install(EXPORT TesseraTargets NAMESPACE Tessera:: DESTINATION ${tessera_cmake_dir})
include(CMakePackageConfigHelpers)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/TesseraConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/TesseraConfig.cmake
                              INSTALL_DESTINATION ${tessera_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TesseraConfig.cmake
              ${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake
        DESTINATION ${tessera_cmake_dir})

set(tessera_share ${CMAKE_INSTALL_DATADIR}/tessera)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/cases ${PROJECT_SOURCE_DIR}/meshes
        DESTINATION ${tessera_share})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/tools/slurm ${PROJECT_SOURCE_DIR}/tools/reference
        DESTINATION ${tessera_share}/tools)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/plot_fields.py ${PROJECT_SOURCE_DIR}/tools/plot_history.py
                 ${PROJECT_SOURCE_DIR}/tools/burgers_reference.py
                 ${PROJECT_SOURCE_DIR}/tools/tessera_results.py
        DESTINATION ${tessera_share}/tools)
