# cmake/CoexecAbt.cmake: libcoexec-abt, the Argobots 1.x API (ABT_*) over
# libcoexec's public API (src/abt/, include/coexec/abt/abt.h).
#
# Targets
#   coexec_abt_shared   libcoexec-abt.so, linked to libcoexec.so
#   coexec_abt_static   libcoexec-abt.a, for libcoexec.a
# exported as coexec::abt (the shared one when built) and coexec::abt_static,
# installed with libcoexec (cmake/CoexecInstall.cmake) together with
# coexec-abt.pc. The layer includes only <coexec.h>, never src/.
#
# Included from the top-level CMakeLists.txt once the libcoexec targets exist.

file(GLOB COEXEC_ABT_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/abt/*.c)
set(COEXEC_ABT_TARGETS "")
foreach(kind IN ITEMS shared static)
  string(TOUPPER ${kind} KIND)
  if(NOT TARGET coexec_${kind})
    continue()
  endif()
  add_library(coexec_abt_${kind} ${KIND} ${COEXEC_ABT_SOURCES})
  target_include_directories(coexec_abt_${kind} PUBLIC
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include/coexec/abt>
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/coexec/abt>)
  target_compile_definitions(coexec_abt_${kind} PRIVATE _GNU_SOURCE
      $<$<NOT:$<BOOL:${COEXEC_TOOLS}>>:COEXEC_NO_TOOLS=1>)
  target_compile_options(coexec_abt_${kind} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_link_libraries(coexec_abt_${kind} PUBLIC coexec_${kind} PRIVATE Threads::Threads)
  set_target_properties(coexec_abt_${kind} PROPERTIES OUTPUT_NAME coexec-abt
      C_VISIBILITY_PRESET hidden POSITION_INDEPENDENT_CODE ON)
  list(APPEND COEXEC_ABT_TARGETS coexec_abt_${kind})
endforeach()
if(TARGET coexec_abt_shared)
  set_target_properties(coexec_abt_shared PROPERTIES VERSION ${PROJECT_VERSION}
      SOVERSION ${COEXEC_SOVERSION} EXPORT_NAME abt)
  target_link_options(coexec_abt_shared PRIVATE "LINKER:--no-undefined"
      "LINKER:--version-script=${PROJECT_SOURCE_DIR}/src/abt/coexec-abt.map")
  set_property(TARGET coexec_abt_shared APPEND PROPERTY LINK_DEPENDS
      ${PROJECT_SOURCE_DIR}/src/abt/coexec-abt.map)
  set_target_properties(coexec_abt_static PROPERTIES EXPORT_NAME abt_static)
  add_library(coexec::abt ALIAS coexec_abt_shared)
else()
  set_target_properties(coexec_abt_static PROPERTIES EXPORT_NAME abt)
  add_library(coexec::abt ALIAS coexec_abt_static)
endif()
list(APPEND COEXEC_TARGETS ${COEXEC_ABT_TARGETS})
