/*
 * coexec/service.h: the service stream, which runs blocking calls for the
 * units of the compute streams, and the POSIX calls offloaded to it.
 *
 * An HPC code's compute streams must never block in the kernel: one
 * blocking read stalls every unit queued behind it. The service stream is
 * a small set of OS threads, on CPUs of their own where the machine has
 * them (COEXEC_SERVICE_CPUS), that take requests from a lock-free
 * multi-producer queue and run them. The caller's request record lives on
 * its own stack (coexec_offload) or in its own storage (the submit/poll
 * pair), so a call allocates nothing. A ULT waiting for its call parks and
 * its stream runs other units; an external thread sleeps on a futex; a
 * tasklet submits, returns COEXEC_PENDING, and is polled again once done.
 *
 * A call that blocks for long does not hold back the others: when requests
 * wait while every service thread has been inside one call for over a
 * millisecond, the service stream starts another thread (up to
 * service_max_threads); threads beyond service_threads exit after 50 ms
 * idle. The service threads (and the ring thread below) start on the
 * first offloaded call: a program that never offloads has none.
 *
 * File I/O has a second path. Where the kernel allows io_uring (and the
 * library was built with liburing), the file calls of the wrappers below
 * (coexec_read, _write, _pread, _pwrite, _readv, _writev, _open, _close,
 * _fsync, _fdatasync) skip the service threads: a ring thread of the
 * service stream, on the same CPU, takes them in batches, hands each batch
 * to the kernel with one submission and completes each call when the
 * kernel does. A read that waits forever (a pipe, a socket) then occupies
 * no thread. Results are the system calls' (pread and pwrite on a pipe
 * still fail with -ESPIPE; the reads that use the file position of one
 * file descriptor run one after the other, and so do its writes).
 * service_io (coexec/runtime.h) or
 * COEXEC_SERVICE_IO chooses: auto (io_uring where it can be had, else the
 * threads, silently), uring (the same, with one warning when it falls
 * back), threads. coexec_service_get_info's io_path says which runs.
 *
 * Results follow the kernel's convention: the call's non-negative result,
 * or -errno. Every request completes exactly once: with its result; with
 * COEXEC_ECANCELED when cancelled before it started, when still queued at
 * finalize, or when still running 2 s after finalize began (the call is
 * abandoned: its thread is left to finish it and exits without touching
 * the request; an io_uring call is cancelled in the kernel first, and
 * abandoned only if that fails within a second); or with COEXEC_ECLOSED
 * when it was submitted after finalize began. An abandoned call may still
 * write into its buffer when it ends: keep a buffer you gave one alive
 * until the process exits.
 */
#ifndef COEXEC_SERVICE_H
#define COEXEC_SERVICE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "defs.h"
#include "types.h"

struct stat;
struct iovec;
struct sockaddr;
struct addrinfo;
struct pollfd;

/* A blocking call to run on the service stream: returns its result
 * (>= 0) or -errno. It runs on a service thread: errno is that thread's. */
typedef intptr_t (*coexec_offload_fn_t)(void *arg);

/* A request of the submit/poll pair, in caller storage; it must stay
 * alive (and unmoved) until it completed and was waited for, polled to
 * READY, or cancelled. One tasklet polls it at a time (the last poll's
 * tasklet is the one woken). */
typedef struct coexec_request {
    uint64_t opaque_[12];
} coexec_request_t;

COEXEC_BEGIN_DECLS

/* ---- offloaded calls and requests ---------------------------------------- */

/*
 * Runs fn(arg) on a service thread (never through io_uring) and waits for
 * it; *ret (may be NULL) receives its result.
 * Context: a ULT (parks; its stream runs other units) or an external
 * thread (sleeps). Switches: yes (a ULT).
 * Returns: COEXEC_OK (the call ran, *ret is its result, which may be
 * -errno); COEXEC_EINVAL (fn NULL); COEXEC_ECONTEXT (a tasklet: use
 * coexec_request_submit and coexec_request_poll; or a scheduler loop);
 * COEXEC_ECANCELED (finalize began while it was queued); COEXEC_ECLOSED
 * (finalize had begun); COEXEC_ENOMEM or COEXEC_EAGAIN (the service
 * threads start on the first call, and one could not); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_offload(coexec_offload_fn_t fn,
                                               void *arg, intptr_t *ret);

/*
 * Queues fn(arg) for a service thread without waiting; req records it. A
 * request that was submitted before may be submitted again once it
 * completed (or was cancelled); while it is still queued or running the
 * call is refused and the request runs once. Of concurrent submits of one
 * completed request, one succeeds and the others are refused.
 * Context: any thread, tasklets included. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (req or fn NULL); COEXEC_EBUSY (req
 * is queued, running, or just completing); COEXEC_ECLOSED;
 * COEXEC_ENOMEM or COEXEC_EAGAIN (as coexec_offload); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_request_submit(coexec_request_t *req, coexec_offload_fn_t fn, void *arg);

/*
 * COEXEC_READY (0) with *ret (may be NULL) set once req completed; else
 * registers the tasklet being polled and returns COEXEC_PENDING.
 * Context: a tasklet's function. Switches: never.
 * Returns: COEXEC_READY; COEXEC_PENDING; COEXEC_ECANCELED (cancelled);
 * COEXEC_EINVAL; COEXEC_EHANDLE (req was never submitted). A request may
 * be submitted again once it completed and its waiters have returned.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_request_poll(coexec_request_t *req, coexec_poll_t *cx, intptr_t *ret);

/*
 * Waits until req completed; *ret (may be NULL) receives its result.
 * Context: a ULT or an external thread. Switches: yes (a ULT).
 * Returns: COEXEC_OK; COEXEC_ECANCELED; COEXEC_EINVAL; COEXEC_EHANDLE;
 * COEXEC_ECONTEXT; COEXEC_ENOTINIT when req is still pending and the
 * runtime is not running (a request of the parent, in a forked child).
 */
COEXEC_API COEXEC_NODISCARD int coexec_request_wait(coexec_request_t *req,
                                                    intptr_t *ret);

/*
 * coexec_request_wait, waiting at most timeout_ns: the way to survive a
 * call that hangs. On COEXEC_ETIMEDOUT req is still queued or running: wait
 * for it again (or cancel it, if it has not started) before its memory
 * goes.
 * Context and Switches: as coexec_request_wait.
 * Returns: as coexec_request_wait, plus COEXEC_ETIMEDOUT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_request_wait_timed(coexec_request_t *req, intptr_t *ret,
                          uint64_t timeout_ns);

/*
 * Cancels req if no service thread has started it: it completes with
 * COEXEC_ECANCELED and its waiters are released. Requests of
 * coexec_request_submit run on the service threads, so this never races
 * with io_uring.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK (cancelled); COEXEC_EBUSY (already running or done);
 * COEXEC_EINVAL; COEXEC_EHANDLE.
 */
COEXEC_API COEXEC_NODISCARD int coexec_request_cancel(coexec_request_t *req);

/* Service stream state, for diagnostics. */
typedef struct coexec_service_info {
    size_t size;       /* sizeof(coexec_service_info_t); set by the caller */
    int threads;       /* service threads now */
    int idle;          /* of which idle */
    int cpu;           /* CPU of the first, -1 unpinned */
    int shares_cpu;    /* 1 when that CPU also runs a compute stream */
    uint64_t completed; /* requests completed since init, both paths */
    const char *io_path; /* how the wrappers' file calls run: "io_uring"
                            (the ring thread) or "threads"; a static
                            string */
} coexec_service_info_t;

/*
 * Fills *info (set info->size first). threads counts the service threads
 * that run calls, not the ring thread. The service threads and the ring
 * start on the first offloaded call, or on this call if none came yet.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_service_get_info(coexec_service_info_t *info);

/* ---- POSIX calls --------------------------------------------------------- */

/*
 * POSIX calls with the libc arguments, returning the libc result or
 * -errno (never setting errno).
 * Context: any. Called from a ULT on a compute stream they run on the
 * service stream: the file calls (read, write, pread, pwrite, readv,
 * writev, open, close, fsync, fdatasync) through io_uring when
 * io_path is "io_uring", every call through a service thread otherwise.
 * Called from anywhere else (an external thread, a tasklet, a service
 * thread, or without the runtime) they run directly, as the plain call.
 * Switches: a ULT parks until its call completed (its stream runs other
 * units meanwhile); elsewhere the call blocks the OS thread as libc's
 * would.
 * Returns: the libc result or -errno; COEXEC_ECANCELED when finalize
 * cancelled the offloaded call (see above). coexec_open takes its mode
 * argument always. coexec_getaddrinfo returns getaddrinfo's own code (0 or
 * an EAI_* value).
 */
COEXEC_API ssize_t coexec_read(int fd, void *buf, size_t n);
COEXEC_API ssize_t coexec_write(int fd, const void *buf, size_t n);
COEXEC_API ssize_t coexec_pread(int fd, void *buf, size_t n, off_t off);
COEXEC_API ssize_t coexec_pwrite(int fd, const void *buf, size_t n, off_t off);
COEXEC_API ssize_t coexec_readv(int fd, const struct iovec *iov, int cnt);
COEXEC_API ssize_t coexec_writev(int fd, const struct iovec *iov, int cnt);
COEXEC_API int coexec_open(const char *path, int flags, mode_t mode);
COEXEC_API int coexec_close(int fd);
COEXEC_API int coexec_fsync(int fd);
COEXEC_API int coexec_fdatasync(int fd);
COEXEC_API int coexec_ftruncate(int fd, off_t len);
COEXEC_API int coexec_stat(const char *path, struct stat *st);
COEXEC_API int coexec_fstat(int fd, struct stat *st);
COEXEC_API int coexec_unlink(const char *path);
COEXEC_API int coexec_rename(const char *from, const char *to);
COEXEC_API int coexec_mkdir(const char *path, mode_t mode);
COEXEC_API int coexec_getaddrinfo(const char *node, const char *service,
                                  const struct addrinfo *hints,
                                  struct addrinfo **res);
COEXEC_API int coexec_connect(int fd, const struct sockaddr *addr,
                              unsigned addrlen);
COEXEC_API int coexec_accept(int fd, struct sockaddr *addr, unsigned *addrlen);
COEXEC_API int coexec_poll(struct pollfd *fds, unsigned long nfds, int timeout_ms);

COEXEC_END_DECLS

#endif /* COEXEC_SERVICE_H */
