# What `cmake --install` puts under the prefix for other C++ projects (component `library`):
#   include/cky/<folder>/*.h          the public headers, included as "parser/parser.h"
#   lib/libcky_*.a                    one static library per folder (PIC)
#   lib/cmake/cky/cky-config.cmake    find_package(cky): the targets cky::<folder> and cky::cky
# The `cky` command goes to bin/ (default component) and the Python package to its interpreter's
# site-packages (component `python`, python/CMakeLists.txt).
#
#   find_package(cky 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE cky::cky)   # or only what it uses: cky::parser, cky::eval...
#
# tests/consumer/ is such a project; tests/consumer_test.sh builds it against an install.
include(CMakePackageConfigHelpers)

# Every library, in dependency order. The exported name drops the "cky_" prefix: cky::parser.
set(CKY_INSTALLED_LIBRARIES
    cky_common cky_treebank cky_grammar_io cky_default_grammar cky_lexicon cky_cuda_common
    cky_cuda_viterbi cky_cuda_inside_outside cky_cuda_membership cky_cuda_dense cky_cuda_train
    cky_cuda_pruning
    cky_parser
    cky_membership cky_dense cky_train cky_eval cky_text)
foreach(lib ${CKY_INSTALLED_LIBRARIES})
  string(REGEX REPLACE "^cky_" "" export_name ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${export_name})
  # The source root is the include root in the tree (top-level include_directories) and
  # include/cky once installed.
  target_include_directories(${lib} INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
                                              $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/cky>)
endforeach()

# cky::cky: every library.
add_library(cky_everything INTERFACE)
set_target_properties(cky_everything PROPERTIES EXPORT_NAME cky)
target_link_libraries(cky_everything INTERFACE ${CKY_INSTALLED_LIBRARIES})
add_library(cky::cky ALIAS cky_everything)

install(TARGETS ${CKY_INSTALLED_LIBRARIES} cky_everything
        EXPORT cky-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT library
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT library)

# The headers of the library folders, tests' helpers left out. Headers under cuda/ are plain C++
# (the .cuh files are the kernels' own and stay behind).
foreach(folder common treebank grammar_io lexicon cuda parser membership dense train eval text)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${folder} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cky
          COMPONENT library FILES_MATCHING PATTERN "*.h" PATTERN "*_test*" EXCLUDE)
endforeach()

set(cky_config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/cky)
install(EXPORT cky-targets NAMESPACE cky:: DESTINATION ${cky_config_dir} COMPONENT library)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/cky-config.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/cky-config.cmake
                              INSTALL_DESTINATION ${cky_config_dir})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/cky-config-version.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/cky-config.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/cky-config-version.cmake
        DESTINATION ${cky_config_dir} COMPONENT library)
