# cmake/CoexecMPI.cmake: libcoexec-mpi (include/coexec/mpi.h, src/mpi/),
# the MPI waits that park units, built beside libcoexec when an MPI is
# found, so that libcoexec itself never links MPI.
#
#   COEXEC_MPI   AUTO (default): built when find_package(MPI) finds C
#                bindings; ON: required; OFF: not built
#
# Defines the target coexec_mpi (libcoexec-mpi.so, or .a when only the
# static libcoexec is built), exported as coexec::mpi, linking libcoexec
# and MPI::MPI_C; sets COEXEC_HAVE_MPI and appends the target to
# COEXEC_TARGETS (installed with libcoexec's rules: CoexecInstall.cmake,
# which also writes coexec-mpi.pc). Included after COEXEC_TARGETS is known.

set(COEXEC_MPI "AUTO" CACHE STRING "Build libcoexec-mpi: AUTO, ON or OFF")
set_property(CACHE COEXEC_MPI PROPERTY STRINGS AUTO ON OFF)
set(COEXEC_HAVE_MPI OFF)
if(COEXEC_MPI STREQUAL "ON")
  find_package(MPI REQUIRED COMPONENTS C)
elseif(COEXEC_MPI STREQUAL "AUTO")
  find_package(MPI QUIET COMPONENTS C)
endif()

if(NOT COEXEC_MPI STREQUAL "OFF" AND MPI_C_FOUND)
  set(COEXEC_HAVE_MPI ON)
  if(TARGET coexec_shared)
    set(_coexec_mpi_kind SHARED)
    set(_coexec_mpi_base coexec_shared)
  else()
    set(_coexec_mpi_kind STATIC)
    set(_coexec_mpi_base coexec_static)
  endif()
  add_library(coexec_mpi ${_coexec_mpi_kind}
      ${PROJECT_SOURCE_DIR}/src/mpi/engine.c ${PROJECT_SOURCE_DIR}/src/mpi/calls.c)
  add_library(coexec::mpi ALIAS coexec_mpi)
  target_link_libraries(coexec_mpi PUBLIC ${_coexec_mpi_base} MPI::MPI_C)
  target_include_directories(coexec_mpi PRIVATE ${PROJECT_SOURCE_DIR}/src/mpi)
  target_compile_options(coexec_mpi PRIVATE -Wall -Wextra)
  set_target_properties(coexec_mpi PROPERTIES OUTPUT_NAME coexec-mpi EXPORT_NAME mpi
      C_VISIBILITY_PRESET hidden POSITION_INDEPENDENT_CODE ON)
  if(_coexec_mpi_kind STREQUAL "SHARED")
    set_target_properties(coexec_mpi PROPERTIES VERSION ${PROJECT_VERSION}
        SOVERSION ${COEXEC_SOVERSION})
    target_link_options(coexec_mpi PRIVATE "LINKER:--no-undefined")
  endif()
  list(APPEND COEXEC_TARGETS coexec_mpi)
  # The environment of the tests and examples run under mpiexec: Open MPI
  # may run as root and place more ranks than cores, over shared memory
  # only (the TCP transport's own lock order, inside Open MPI, is what
  # ThreadSanitizer would report); MPI's own allocations kept to the exit
  # are not leaks of ours; and what MPI, which is not instrumented, does
  # inside (a message copied into a waiter's buffer by whichever thread
  # made progress, ordered by request flags ThreadSanitizer cannot see) is
  # not checked: ignore_noninstrumented_modules. The OMPI_* variables mean
  # nothing to other MPIs.
  set(COEXEC_MPI_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
      OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader
      ASAN_OPTIONS=detect_leaks=0
      TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1)
  message(STATUS "coexec: libcoexec-mpi with MPI ${MPI_C_VERSION} (${MPIEXEC_EXECUTABLE})")
elseif(NOT COEXEC_MPI STREQUAL "OFF")
  message(STATUS "coexec: no MPI found: libcoexec-mpi is not built (Debian: libopenmpi-dev)")
endif()
