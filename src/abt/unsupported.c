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

int ABT_tool_register_thread_callback(ABT_tool_thread_callback_fn cb_func,
    uint64_t event_mask, void *user_arg)
{
    (void)cb_func;
    (void)event_mask;
    (void)user_arg;
    ABTX_NA("ABT_tool_register_thread_callback");
}

int ABT_tool_query_thread(ABT_tool_context context, uint64_t event,
    ABT_tool_query_kind query_kind, void *val)
{
    (void)context;
    (void)event;
    (void)query_kind;
    (void)val;
    ABTX_NA("ABT_tool_query_thread");
}
