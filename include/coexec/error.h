/*
 * coexec/error.h: error codes.
 *
 * Every fallible call returns COEXEC_OK (0) or a negative code. Codes with a
 * POSIX name are the negated errno value (COEXEC_EINVAL == -EINVAL), so a
 * blocking call offloaded to the runtime reports kernel errors unchanged.
 * Codes that only the runtime produces sit in -4001..-4095. The library
 * never sets errno.
 */
#ifndef COEXEC_ERROR_H
#define COEXEC_ERROR_H

#include <errno.h>

#include "defs.h"

/*
 * X(name, value, description): the one table from which the constants,
 * coexec_strerror() and coexec_err_name() are generated.
 */
#define COEXEC_ERROR_TABLE(X)                                                  \
    X(OK, 0, "success")                                                        \
    X(EINVAL, -EINVAL, "invalid argument")                                     \
    X(ENOMEM, -ENOMEM, "out of memory")                                        \
    X(EAGAIN, -EAGAIN, "resource temporarily unavailable")                     \
    X(EBUSY, -EBUSY, "object is busy or still in use")                         \
    X(ETIMEDOUT, -ETIMEDOUT, "timed out")                                      \
    X(ECANCELED, -ECANCELED, "operation canceled")                             \
    X(EPERM, -EPERM, "operation not permitted")                                \
    X(ENOSYS, -ENOSYS, "not supported")                                        \
    X(EDEADLK, -EDEADLK, "operation would deadlock")                           \
    X(ENOENT, -ENOENT, "no such entry")                                        \
    X(ERANGE, -ERANGE, "value out of range")                                   \
    X(EIO, -EIO, "input/output error")                                         \
    X(ECONTEXT, -4001, "call not allowed from this kind of caller")            \
    X(ENOTINIT, -4002, "runtime not initialized (or already finalized)")       \
    X(EHANDLE, -4003, "invalid, freed or foreign handle")                      \
    X(EACCESS, -4004, "pool access mode forbids this thread")                  \
    X(ESTATE, -4005, "object is in the wrong state for this call")             \
    X(EENV, -4006, "malformed COEXEC_* environment variable")                  \
    X(ECLOSED, -4007, "object closed")                                         \
    X(EINIT, -4008, "runtime already initialized")

/* The codes: COEXEC_<name> = value for each row of COEXEC_ERROR_TABLE. */
enum coexec_error {
#define COEXEC_ERROR_ENUM_(name, value, text) COEXEC_##name = (value),
    COEXEC_ERROR_TABLE(COEXEC_ERROR_ENUM_)
#undef COEXEC_ERROR_ENUM_
};

COEXEC_BEGIN_DECLS

/*
 * A sentence describing code, or "unknown error" for a value outside the
 * table. Static storage; never NULL.
 * Context: any thread, before or after coexec_init. Switches: never.
 */
COEXEC_API const char *coexec_strerror(int code);

/*
 * The constant's name without its prefix ("EINVAL", "ECONTEXT", "OK"), or
 * "UNKNOWN". Static storage; never NULL.
 * Context: any thread, before or after coexec_init. Switches: never.
 */
COEXEC_API const char *coexec_err_name(int code);

COEXEC_END_DECLS

#endif /* COEXEC_ERROR_H */
