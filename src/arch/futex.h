/*
 * src/arch/futex.h: sleeping on a 32-bit word. The Linux backend is
 * futex_linux.c; the contract is the usual one: wait returns when the word
 * no longer holds `expected`, on a wake, on a timeout, or spuriously, so
 * callers always re-check their condition.
 */
#ifndef COEXEC_ARCH_FUTEX_H
#define COEXEC_ARCH_FUTEX_H

#include <stdint.h>
#include <time.h>

#include "atomic.h"

/* Sleeps while *word == expected; rel_timeout NULL means no timeout.
 * Returns 0, or -ETIMEDOUT when the timeout expired. */
int coexec__futex_wait(atom_u32_t *word, uint32_t expected,
                       const struct timespec *rel_timeout);

/* Wakes up to n sleepers of word. */
void coexec__futex_wake(atom_u32_t *word, int n);

#endif /* COEXEC_ARCH_FUTEX_H */
