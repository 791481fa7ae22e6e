/*
 * src/base/global.c: the runtime-wide record (src/base/global.h), the
 * warning line, and the identities of the calling OS thread.
 */
#include <stdarg.h>

#include "base/global.h"

struct coexec__global coexec__g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

void coexec__warn(const char *fmt, ...)
{
    if (coexec__g.cfg.quiet)
        return;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "coexec: warning: %s\n", buf);
}

static __thread char thread_token_;

void *coexec__thread_token(void)
{
    return &thread_token_;
}

static __thread uintptr_t thread_owner_;
static atom_u64_t thread_owners;

void *coexec__thread_owner(void)
{
    if (UNLIKELY(!thread_owner_))
        thread_owner_ =
            (uintptr_t)((atom_fadd_rlx_u64(&thread_owners, 1) + 1) << 1) | 1;
    return (void *)thread_owner_;
}
