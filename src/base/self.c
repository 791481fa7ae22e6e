/*
 * src/base/self.c: the calling thread's stream (src/base/self.h).
 */
#include "base/self.h"

__thread struct coexec_xstream_rec *coexec__tls_xs
    __attribute__((tls_model("initial-exec")));

NOINLINE struct coexec_xstream_rec *coexec__xs_self(void)
{
    /* The empty asm keeps the compiler from treating this as a pure
     * function of the (unchanging, as it believes) OS thread. */
    __asm__ volatile("" ::: "memory");
    return coexec__tls_xs;
}

void coexec__xs_set_self(struct coexec_xstream_rec *xs)
{
    coexec__tls_xs = xs;
}
