# Checks that the C11 and libatomic_ops backends of src/arch/atomic.h define
# the same functions and types: preprocesses atomic.h once per backend and
# compares the sets of atom_* / tagged_val_t identifiers that result.
# (test_atomics.c calls every name, which checks one direction at compile
# time; this checks that neither backend has names the other lacks.)
#
#   cmake -DCC=<compiler> -DSRC=<repo>/src [-DAO_INC=<dirs;...>] -P atomic-names.cmake

foreach(var CC SRC)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "atomic-names.cmake: -D${var}=... is required")
  endif()
endforeach()

function(atom_names out)
  set(incs -I${SRC})
  foreach(d IN LISTS AO_INC)
    list(APPEND incs -I${d})
  endforeach()
  execute_process(
    COMMAND ${CC} -E -P ${incs} ${ARGN} -x c ${SRC}/arch/atomic.h
    OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "preprocessing atomic.h ${ARGN} failed:\n${err}")
  endif()
  string(REGEX MATCHALL "[A-Za-z_][A-Za-z0-9_]*" toks "${text}")
  list(FILTER toks INCLUDE REGEX "^(atom_[A-Za-z0-9_]*|tagged_val_t)$")
  list(REMOVE_DUPLICATES toks)
  list(SORT toks)
  set(${out} "${toks}" PARENT_SCOPE)
endfunction()

atom_names(c11)
atom_names(ao -DCOEXEC_ATOMICS_AO=1)
atom_names(ao_loop -DCOEXEC_ATOMICS_AO=1 -DCOEXEC_AO_U32_IN_AO_T=1)

list(LENGTH c11 n)
set(bad 0)
foreach(variant ao ao_loop)
  set(only_c11 ${c11})
  list(REMOVE_ITEM only_c11 ${${variant}})
  set(only_other ${${variant}})
  list(REMOVE_ITEM only_other ${c11})
  if(only_c11 OR only_other)
    set(bad 1)
    message(SEND_ERROR "atomic backends out of sync (c11 vs ${variant}):\n"
      "  only in c11: ${only_c11}\n  only in ${variant}: ${only_other}")
  endif()
endforeach()
if(n LESS 100)
  message(FATAL_ERROR "only ${n} atom_* names found in the C11 backend: the check is broken")
endif()
if(NOT bad)
  message(STATUS "atomic backends in sync: ${n} names each")
endif()
