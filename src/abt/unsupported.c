/*
 * src/abt/unsupported.c: the Argobots 1.x calls libcoexec-abt does not
 * support yet. Each returns ABT_ERR_FEATURE_NA and prints one note on
 * stderr the first time it is called (docs/ABT-COMPAT.md lists them).
 */
#include "abt_internal.h"

int ABT_thread_set_callback(ABT_thread thread,
    void(*cb_func)(ABT_thread thread, void *cb_arg), void *cb_arg)
{
    (void)thread;
    (void)cb_func;
    (void)cb_arg;
    ABTX_NA("ABT_thread_set_callback");
}

