# cmake/CoexecDocs.cmake: the reference documentation, made from the
# comment blocks of the public headers so that it never drifts from them.
#
#   COEXEC_MAN (ON)          section 3 manual pages: scripts/gen_man.py
#                            writes them at build time (target coexec-man,
#                            in ALL) into <build>/man/man3; installed into
#                            ${CMAKE_INSTALL_MANDIR}/man3. Needs python3.
#                            The build fails when a public function has no
#                            comment block.
#   COEXEC_BUILD_DOCS (OFF)  the HTML reference (Doxygen, docs/Doxyfile.in,
#                            warnings are errors): built with ALL into
#                            <build>/docs/html and installed into
#                            ${CMAKE_INSTALL_DOCDIR}/html. Without it the
#                            target coexec-docs still exists when doxygen
#                            is found, and builds on demand.
#
# Included from the top-level CMakeLists.txt.

option(COEXEC_MAN "Generate and install the section 3 manual pages (needs python3)" ON)
option(COEXEC_BUILD_DOCS "Build (with ALL) and install the HTML reference (needs doxygen)" OFF)

find_program(COEXEC_PYTHON3 NAMES python3)
# The interpreter itself rather than a wrapper on PATH (pyenv's shims take
# half a second to start, and Doxygen starts its input filter once a header).
if(COEXEC_PYTHON3 AND NOT COEXEC_PYTHON3_EXE)
  execute_process(COMMAND ${COEXEC_PYTHON3} -c "import sys; print(sys.executable)"
                  OUTPUT_VARIABLE _coexec_py OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _coexec_py_rc)
  if(_coexec_py_rc EQUAL 0 AND EXISTS "${_coexec_py}")
    set(COEXEC_PYTHON3_EXE "${_coexec_py}" CACHE INTERNAL "python3 for the documentation scripts")
  else()
    set(COEXEC_PYTHON3_EXE "${COEXEC_PYTHON3}" CACHE INTERNAL "python3 for the documentation scripts")
  endif()
endif()

file(GLOB COEXEC_PUBLIC_HEADERS CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/include/coexec.h ${PROJECT_SOURCE_DIR}/include/coexec/*.h)
set(COEXEC_DOC_SCRIPTS ${PROJECT_SOURCE_DIR}/scripts/hdrdoc.py)

# ---- manual pages ----------------------------------------------------------
if(COEXEC_MAN)
  if(NOT COEXEC_PYTHON3_EXE)
    message(FATAL_ERROR "coexec: python3 not found: it generates the manual pages "
                        "(scripts/deps.sh build installs it), or configure with -DCOEXEC_MAN=OFF")
  endif()
  set(COEXEC_MAN_DIR ${PROJECT_BINARY_DIR}/man)
  add_custom_command(
    OUTPUT ${COEXEC_MAN_DIR}/pages.stamp
    COMMAND ${COEXEC_PYTHON3_EXE} ${PROJECT_SOURCE_DIR}/scripts/gen_man.py
            --out ${COEXEC_MAN_DIR} ${PROJECT_SOURCE_DIR}/include
    COMMAND ${CMAKE_COMMAND} -E touch ${COEXEC_MAN_DIR}/pages.stamp
    DEPENDS ${COEXEC_PUBLIC_HEADERS} ${COEXEC_DOC_SCRIPTS}
            ${PROJECT_SOURCE_DIR}/scripts/gen_man.py
    COMMENT "Generating the manual pages from the public headers"
    VERBATIM)
  add_custom_target(coexec-man ALL DEPENDS ${COEXEC_MAN_DIR}/pages.stamp)
  install(DIRECTORY ${COEXEC_MAN_DIR}/man3 DESTINATION ${CMAKE_INSTALL_MANDIR}
          COMPONENT Documentation FILES_MATCHING PATTERN "*.3")
endif()

# ---- HTML reference --------------------------------------------------------
find_program(COEXEC_DOXYGEN NAMES doxygen)
if(COEXEC_BUILD_DOCS AND NOT COEXEC_DOXYGEN)
  message(FATAL_ERROR "coexec: COEXEC_BUILD_DOCS needs doxygen (scripts/deps.sh docs installs it)")
endif()
if(COEXEC_BUILD_DOCS AND NOT COEXEC_PYTHON3_EXE)
  message(FATAL_ERROR "coexec: COEXEC_BUILD_DOCS needs python3 (Doxygen's input filter)")
endif()
if(COEXEC_DOXYGEN AND COEXEC_PYTHON3_EXE)
  set(COEXEC_DOCS_OUT ${PROJECT_BINARY_DIR}/docs)
  set(COEXEC_PYTHON3_FOR_DOCS ${COEXEC_PYTHON3_EXE})
  configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${COEXEC_DOCS_OUT}/Doxyfile @ONLY)
  set(_coexec_docs_all "")
  if(COEXEC_BUILD_DOCS)
    set(_coexec_docs_all ALL)
  endif()
  add_custom_command(
    OUTPUT ${COEXEC_DOCS_OUT}/html.stamp
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${COEXEC_DOCS_OUT}/html
    COMMAND ${COEXEC_DOXYGEN} ${COEXEC_DOCS_OUT}/Doxyfile
    COMMAND ${CMAKE_COMMAND} -E touch ${COEXEC_DOCS_OUT}/html.stamp
    WORKING_DIRECTORY ${COEXEC_DOCS_OUT}
    DEPENDS ${COEXEC_PUBLIC_HEADERS} ${COEXEC_DOC_SCRIPTS}
            ${PROJECT_SOURCE_DIR}/scripts/doxygen_filter.py
            ${PROJECT_SOURCE_DIR}/docs/Doxyfile.in
    COMMENT "Building the HTML reference with Doxygen (warnings are errors)"
    VERBATIM)
  add_custom_target(coexec-docs ${_coexec_docs_all} DEPENDS ${COEXEC_DOCS_OUT}/html.stamp)
  if(COEXEC_BUILD_DOCS)
    install(DIRECTORY ${COEXEC_DOCS_OUT}/html DESTINATION ${CMAKE_INSTALL_DOCDIR}
            COMPONENT Documentation)
  endif()
else()
  message(STATUS "coexec: doxygen not found: no coexec-docs target (scripts/deps.sh docs installs it)")
endif()
