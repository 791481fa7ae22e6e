/*
 * src/base/self.h: which stream the calling OS thread runs, for every room.
 *
 * The stream record itself lives in src/xstream/xstream.h, above most of
 * the rooms that ask; they see it as an opaque pointer, plus the one field
 * they need without it: its rank, the record's first member (asserted
 * there).
 */
#ifndef COEXEC_BASE_SELF_H
#define COEXEC_BASE_SELF_H

#include "arch/compiler.h"

struct coexec_xstream_rec;

/* The calling thread's stream, or NULL. Not inlined on purpose: a ULT may
 * resume on another OS thread, and the compiler must not reuse a
 * thread-local address computed before a switch. */
struct coexec_xstream_rec *coexec__xs_self(void);

/* The same, inlined, for code that has not switched since it was entered
 * (a public call's prologue): there the OS thread cannot have changed. */
extern __thread struct coexec_xstream_rec *coexec__tls_xs
    __attribute__((tls_model("initial-exec")));
static inline struct coexec_xstream_rec *xs_self_entry(void)
{
    return coexec__tls_xs;
}
void coexec__xs_set_self(struct coexec_xstream_rec *xs);

/* The rank of stream xs: the first member of its record. */
static ALWAYS_INLINE int xs_rank_of(const struct coexec_xstream_rec *xs)
{
    return *(const int *)(const void *)xs;
}

#endif /* COEXEC_BASE_SELF_H */
