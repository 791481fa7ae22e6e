/*
 * src/arch/futex_linux.c: src/arch/futex.h on Linux's futex(2), private
 * to the process.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "futex.h"

int coexec__futex_wait(atom_u32_t *word, uint32_t expected,
                       const struct timespec *rel_timeout)
{
    /* The library never changes the caller's errno. */
    int saved = errno;
    long r = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected,
                     rel_timeout, NULL, 0);
    int err = (r == -1) ? errno : 0;
    errno = saved;
    return err == ETIMEDOUT ? -ETIMEDOUT : 0;
}

void coexec__futex_wake(atom_u32_t *word, int n)
{
    int saved = errno;
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
    errno = saved;
}
