# qfleet_add_app(): one research app the way every app is built (docs/architecture.md,
# "How an app is built"): its logic in one shared library, qfleet_<NAME>, on the
# PyTorch adapter; a thin executable over it (OUTPUT the binary's name, from main.cpp);
# Python loads the same library for `python -m qfleet.<app>`. In the wheel (SKBUILD)
# the library sits next to libqfleet_torch.so in the package; otherwise the library
# and the binary install under lib/ and bin/.
#
#   qfleet_add_app(NAME meta OUTPUT qfleet-meta UNITY 5 SOURCES a.cpp ...
#                  [PUBLIC_LINK target ...] [PRIVATE_LINK target ...] [PRIVATE_INCLUDE dir ...])
#
# Every app links qfleet::torch and nlohmann_json publicly and CLI11 privately.
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
include(GNUInstallDirs)

function(qfleet_add_app)
  cmake_parse_arguments(APP "" "NAME;OUTPUT;UNITY" "SOURCES;PUBLIC_LINK;PRIVATE_LINK;PRIVATE_INCLUDE" ${ARGN})
  if(NOT APP_NAME OR NOT APP_OUTPUT OR NOT APP_UNITY OR NOT APP_SOURCES)
    message(FATAL_ERROR "qfleet_add_app: NAME, OUTPUT, UNITY and SOURCES are required")
  endif()
  set(lib qfleet_${APP_NAME})
  add_library(${lib} SHARED ${APP_SOURCES})
  # apps/common: what every app shares (the error ladder, common/cli_errors.hpp).
  target_include_directories(${lib} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR} PRIVATE ${PROJECT_SOURCE_DIR}/apps)
  if(APP_PRIVATE_INCLUDE)
    target_include_directories(${lib} PRIVATE ${APP_PRIVATE_INCLUDE})
  endif()
  target_link_libraries(${lib} PUBLIC qfleet::torch nlohmann_json::nlohmann_json ${APP_PUBLIC_LINK}
                               PRIVATE CLI11::CLI11 ${APP_PRIVATE_LINK})
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
