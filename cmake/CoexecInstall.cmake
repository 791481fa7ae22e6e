# cmake/CoexecInstall.cmake: install rules and the packages consumers use.
#
# Installs
#   include/coexec.h, include/coexec/*.h
#   libcoexec.so.X.Y.Z (+ SONAME and dev links) and libcoexec.a
#   libcoexec-abt.so / .a, include/coexec/abt/abt.h and coexec-abt.pc
#                                        when COEXEC_ABT is on
#   <libdir>/pkgconfig/coexec.pc         relocatable (prefix from ${pcfiledir})
#   libcoexec-mpi and coexec-mpi.pc      when it is built (CoexecMPI.cmake)
#   <libdir>/cmake/coexec/               coexecConfig.cmake, its version file,
#                                        coexecTargets*.cmake (NAMESPACE coexec::)
#   bin/coexec-bench                     when bench/ defines it (and
#                                        bin/coexec-bench-mpi, its MPI worker,
#                                        bin/coexec-bench-abt, its ABT rows)
#
# Included from the top-level CMakeLists.txt once COEXEC_TARGETS is known.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(COEXEC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/coexec)

# ---- headers ---------------------------------------------------------------
install(FILES ${PROJECT_SOURCE_DIR}/include/coexec.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT Development)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/coexec/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/coexec COMPONENT Development
        FILES_MATCHING PATTERN "*.h")

# ---- libraries -------------------------------------------------------------
if(NOT COEXEC_TARGETS)
  message(FATAL_ERROR "coexec: neither COEXEC_BUILD_SHARED nor COEXEC_BUILD_STATIC is on")
endif()
install(TARGETS ${COEXEC_TARGETS} EXPORT coexecTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime
                NAMELINK_COMPONENT Development
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# ---- CMake package: find_package(coexec) -> coexec::coexec[_shared|_static]
install(EXPORT coexecTargets NAMESPACE coexec::
        DESTINATION ${COEXEC_CMAKE_DIR} COMPONENT Development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/coexecConfig.cmake.in
    ${PROJECT_BINARY_DIR}/coexecConfig.cmake
    INSTALL_DESTINATION ${COEXEC_CMAKE_DIR})
# 0.x: a minor release may change the API, so only the same major.minor matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/coexecConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/coexecConfig.cmake
              ${PROJECT_BINARY_DIR}/coexecConfigVersion.cmake
        DESTINATION ${COEXEC_CMAKE_DIR} COMPONENT Development)

# ---- pkg-config: relocatable, prefix computed from the .pc's own directory
file(RELATIVE_PATH COEXEC_PC_RELPREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" COEXEC_PC_RELPREFIX "${COEXEC_PC_RELPREFIX}")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  message(WARNING "coexec: absolute CMAKE_INSTALL_LIBDIR/INCLUDEDIR; coexec.pc will not be relocatable")
  set(COEXEC_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(COEXEC_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  set(COEXEC_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(COEXEC_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
# Static links need the private dependencies: hwloc always, liburing when
# the service stream's io_uring path was built.
set(COEXEC_PC_REQUIRES_PRIVATE "hwloc >= 2.0")
if(COEXEC_HAVE_LIBURING)
  string(APPEND COEXEC_PC_REQUIRES_PRIVATE ", liburing")
endif()
configure_file(${PROJECT_SOURCE_DIR}/coexec.pc.in ${PROJECT_BINARY_DIR}/coexec.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/coexec.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT Development)
# libcoexec-mpi: its own package, requiring coexec; MPI's flags as CMake
# found them (the MPI compiler wrappers give the same).
if(TARGET coexec_mpi)
  list(JOIN MPI_C_INCLUDE_DIRS " -I" _mpi_inc)
  set(COEXEC_PC_MPI_CFLAGS "")
  if(_mpi_inc)
    set(COEXEC_PC_MPI_CFLAGS "-I${_mpi_inc}")
  endif()
  list(JOIN MPI_C_LIBRARIES " " COEXEC_PC_MPI_LIBS)
  configure_file(${PROJECT_SOURCE_DIR}/coexec-mpi.pc.in ${PROJECT_BINARY_DIR}/coexec-mpi.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/coexec-mpi.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT Development)
endif()
# coexec-abt.pc: the Argobots layer; Cflags name include/coexec/abt so that
# programs keep writing #include <abt.h>.
if(COEXEC_ABT)
  configure_file(${PROJECT_SOURCE_DIR}/coexec-abt.pc.in ${PROJECT_BINARY_DIR}/coexec-abt.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/coexec-abt.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT Development)
endif()

# ---- coexec-bench ----------------------------------------------------------
# bench/ is added after this file is included, so the rule is deferred to the
# end of the top-level directory, when the target exists (or not).
function(_coexec_install_bench)
  if(TARGET coexec-bench)
    install(TARGETS coexec-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Bench)
  endif()
  if(TARGET coexec-bench-mpi)
    install(TARGETS coexec-bench-mpi RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Bench)
  endif()
  if(TARGET coexec-bench-abt)
    install(TARGETS coexec-bench-abt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Bench)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL _coexec_install_bench)
