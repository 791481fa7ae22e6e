/*
 * src/waker/sleep.c: coexec_now_ns, coexec_sleep_until, coexec_sleep_ns.
 *
 * A sleeping ULT or tasklet is a waiter no one releases but its timer
 * (src/base/timerheap.c); an external thread sleeps in the kernel.
 */
#include <time.h>

#include "arch/clock.h"
#include "waker/wait.h"

COEXEC_API uint64_t coexec_now_ns(void)
{
    return clock_now_ns();
}

COEXEC_API int coexec_sleep_until(uint64_t deadline)
{
    struct caller c;
    int rc = wait_caller(&c);
    if (rc == COEXEC_OK && !c.u) {
        /* An external thread, with or without the runtime. */
        for (;;) {
            uint64_t now = clock_now_ns();
            if (now >= deadline)
                return COEXEC_OK;
            struct timespec ts = clock_until(deadline);
            nanosleep(&ts, NULL);
        }
    }
    if (rc)
        return rc;
    if (clock_now_ns() >= deadline)
        return COEXEC_OK;
    struct waiter w;
    waiter_init(&w, &c, NULL, NULL, 0, "sleep", NULL);
    /* Only the timer releases the node, so this returns at the deadline,
     * whatever wakes the ULT meanwhile (finalize excepted). */
    uint32_t r = coexec__wait_block(&w, deadline);
    return r == WN_TIMEDOUT ? COEXEC_OK : coexec__wait_result_code(r);
}

COEXEC_API int coexec_sleep_ns(uint64_t ns)
{
    if (ns == 0) {
        struct caller c;
        int rc = wait_caller(&c);
        if (rc == COEXEC_OK && !c.u)
            return COEXEC_OK;
        if (rc)
            return rc;
        return coexec_yield();
    }
    return coexec_sleep_until(clock_deadline(ns));
}
