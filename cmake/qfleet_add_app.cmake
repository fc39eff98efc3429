# qfleet_add_app(): one research app the way every app is built (docs/architecture.md,
# "How an app is built"): its logic in one shared library, qfleet_<NAME>, on the
# PyTorch adapter; a thin executable over it (OUTPUT the binary's name, from main.cpp);
# Python loads the same library for `python -m qfleet.<app>`. In the wheel (SKBUILD)
# the library sits next to libqfleet_torch.so in the package; otherwise the library
# and the binary install under lib/ and bin/.
#
#   qfleet_add_app(NAME meta OUTPUT qfleet-meta UNITY 5 SOURCES a.cpp ...
#                  [CONFIG config.json ...]
#                  [PUBLIC_LINK target ...] [PRIVATE_LINK target ...] [PRIVATE_INCLUDE dir ...])
#
# Every app links qfleet::torch and nlohmann_json publicly, and CLI11 and
# qfleet_app_common (apps/common: the configuration schema, the common command line,
# the error ladder, the report header) privately. Each CONFIG file (a configuration schema,
# apps/common/config.hpp) is embedded at build time: <stem>.json becomes the string
# k<Stem>Json in namespace qfleet::<NAME> of the generated header <NAME>_config.hpp.
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
include(GNUInstallDirs)
include(${CMAKE_CURRENT_LIST_DIR}/qfleet_embed_configs.cmake)

add_library(qfleet_app_common STATIC ${PROJECT_SOURCE_DIR}/apps/common/config.cpp
                                     ${PROJECT_SOURCE_DIR}/apps/common/shell.cpp
                                     ${PROJECT_SOURCE_DIR}/apps/common/report_header.cpp
                                     ${PROJECT_SOURCE_DIR}/apps/common/other_app.cpp
                                     ${PROJECT_SOURCE_DIR}/apps/common/memory_check.cpp
                                     ${PROJECT_SOURCE_DIR}/apps/common/output_folder.cpp)
target_include_directories(qfleet_app_common PUBLIC ${PROJECT_SOURCE_DIR}/apps)
# The source tree's commit for the reports (qfleet_commit_header: adapters/torch/CMakeLists.txt).
add_dependencies(qfleet_app_common qfleet_commit_header)
target_include_directories(qfleet_app_common PRIVATE ${CMAKE_BINARY_DIR}/generated)
target_link_libraries(qfleet_app_common PUBLIC qfleet::torch nlohmann_json::nlohmann_json CLI11::CLI11 PRIVATE qfleet::json)
target_compile_options(qfleet_app_common PRIVATE ${QFLEET_WARNINGS} ${TORCH_CXX_FLAGS})
set_target_properties(qfleet_app_common PROPERTIES POSITION_INDEPENDENT_CODE ON)


function(qfleet_add_app)
  cmake_parse_arguments(APP "" "NAME;OUTPUT;UNITY" "SOURCES;CONFIG;PUBLIC_LINK;PRIVATE_LINK;PRIVATE_INCLUDE" ${ARGN})
  if(NOT APP_NAME OR NOT APP_OUTPUT OR NOT APP_UNITY OR NOT APP_SOURCES)
    message(FATAL_ERROR "qfleet_add_app: NAME, OUTPUT, UNITY and SOURCES are required")
  endif()
  set(lib qfleet_${APP_NAME})
  add_library(${lib} SHARED ${APP_SOURCES})
  # apps/ public: an app's headers name common/config.hpp's ConfigError.
  target_include_directories(${lib} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/apps)
  if(APP_CONFIG)
    qfleet_embed_configs(${APP_NAME} ${CMAKE_CURRENT_BINARY_DIR}/${APP_NAME}_config.hpp ${APP_CONFIG})
    target_include_directories(${lib} PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  if(APP_PRIVATE_INCLUDE)
    target_include_directories(${lib} PRIVATE ${APP_PRIVATE_INCLUDE})
  endif()
  target_link_libraries(${lib} PUBLIC qfleet::torch nlohmann_json::nlohmann_json ${APP_PUBLIC_LINK}
                               PRIVATE CLI11::CLI11 qfleet_app_common ${APP_PRIVATE_LINK})
  target_compile_options(${lib} PRIVATE ${QFLEET_WARNINGS} ${TORCH_CXX_FLAGS})
  qfleet_torch_pch(${lib})
  qfleet_unity(${lib} ${APP_UNITY})
  set_target_properties(${lib} PROPERTIES BUILD_RPATH_USE_ORIGIN ON INSTALL_RPATH "$ORIGIN")

  add_executable(${lib}_cli main.cpp)
  set_target_properties(${lib}_cli PROPERTIES OUTPUT_NAME ${APP_OUTPUT})
  target_link_libraries(${lib}_cli PRIVATE ${lib})
  target_compile_options(${lib}_cli PRIVATE ${QFLEET_WARNINGS})
  if(SKBUILD)
    install(TARGETS ${lib} LIBRARY DESTINATION qfleet)
  else()
    set_target_properties(${lib}_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
    install(TARGETS ${lib} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
    install(TARGETS ${lib}_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endfunction()
