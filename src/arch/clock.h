/*
 * src/arch/clock.h: the monotonic clock every deadline is measured on.
 */
#ifndef COEXEC_ARCH_CLOCK_H
#define COEXEC_ARCH_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A relative timeout as an absolute deadline, saturating. */
static inline uint64_t clock_deadline(uint64_t timeout_ns)
{
    uint64_t now = clock_now_ns();
    return timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
}

/* The time left until deadline as a timespec (zero if past). */
static inline struct timespec clock_until(uint64_t deadline)
{
    uint64_t now = clock_now_ns();
    uint64_t left = deadline > now ? deadline - now : 0;
    struct timespec ts = {(time_t)(left / 1000000000ull),
                          (long)(left % 1000000000ull)};
    return ts;
}

#endif /* COEXEC_ARCH_CLOCK_H */
