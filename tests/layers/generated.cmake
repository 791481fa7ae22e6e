# ctest fj.generated: include/coexec/fj_tasks.h is what
# scripts/gen_fj_tasks.py prints. Run with -DPYTHON3= -DSRC= -DOUT=.
execute_process(COMMAND ${PYTHON3} ${SRC}/scripts/gen_fj_tasks.py
                OUTPUT_FILE ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "scripts/gen_fj_tasks.py failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT}
                        ${SRC}/include/coexec/fj_tasks.h RESULT_VARIABLE diff)
if(NOT diff EQUAL 0)
  message(FATAL_ERROR "include/coexec/fj_tasks.h is not what scripts/gen_fj_tasks.py "
                      "prints: run python3 scripts/gen_fj_tasks.py > include/coexec/fj_tasks.h")
endif()
