/*
 * src/service/posix.c: POSIX calls through the service stream.
 *
 * Room plaque. Each wrapper packs its arguments in a struct on the
 * caller's stack and either runs the call at once (the caller is not a
 * ULT on a compute stream, or the service stream is closed) or offloads a
 * trampoline that runs it on a service thread. Either way the result is
 * the libc result or -errno read on the thread that made the call, and
 * the caller's errno is left alone. File calls (read, write, pread,
 * pwrite, readv, writev, open, close, fsync, fdatasync) go through the
 * service stream's io_uring when it runs: same arguments, same results.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/global.h"
#include "pool/pool.h"
#include "service/service.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

struct px;
typedef intptr_t (*px_fn_t)(struct px *p);

struct px {
    intptr_t a[6];
    px_fn_t fn;
};

/* What the service thread runs: the call p names. */
static intptr_t px_trampoline(void *arg)
{
    struct px *p = arg;
    return p->fn(p);
}

/* The libc result as the API reports it: r, or -errno when r < 0. */
static intptr_t px_ret(intptr_t r)
{
    return r < 0 ? -(intptr_t)errno : r;
}

/* Runs fn(p) here or on the service stream (through io_uring when kind,
 * a FOP_* or 0, is a call the ring carries); returns its result. */
static intptr_t px_call(px_fn_t fn, int kind, struct px *p)
{
    if (coexec__service_offloads()) {
        intptr_t ret;
        int rc = kind ? coexec__service_fop(kind, p->a, &ret) : COEXEC_ENOSYS;
        if (rc == COEXEC_ENOSYS) {
            p->fn = fn;
            rc = coexec_offload(px_trampoline, p, &ret);
        }
        if (rc == COEXEC_OK)
            return ret;
        if (rc != COEXEC_ECLOSED)
            return rc; /* COEXEC_ECANCELED: finalize began */
        /* Closed between the check and the submit: run it here. */
    }
    int saved = errno;
    intptr_t r = fn(p);
    errno = saved;
    return r;
}

#define PX_DEFINE(name, ret_t, call)                                           \
    static intptr_t px_##name(struct px *p)                                   \
    {                                                                          \
        return px_ret((intptr_t)(call));                                       \
    }

#define A(i, T) ((T)p->a[i])

PX_DEFINE(read, ssize_t, read(A(0, int), A(1, void *), A(2, size_t)))
PX_DEFINE(write, ssize_t, write(A(0, int), A(1, const void *), A(2, size_t)))
PX_DEFINE(pread, ssize_t,
          pread(A(0, int), A(1, void *), A(2, size_t), A(3, off_t)))
PX_DEFINE(pwrite, ssize_t,
          pwrite(A(0, int), A(1, const void *), A(2, size_t), A(3, off_t)))
PX_DEFINE(readv, ssize_t, readv(A(0, int), A(1, const struct iovec *), A(2, int)))
PX_DEFINE(writev, ssize_t,
          writev(A(0, int), A(1, const struct iovec *), A(2, int)))
PX_DEFINE(open, int, open(A(0, const char *), A(1, int), A(2, mode_t)))
PX_DEFINE(close, int, close(A(0, int)))
PX_DEFINE(fsync, int, fsync(A(0, int)))
PX_DEFINE(fdatasync, int, fdatasync(A(0, int)))
PX_DEFINE(ftruncate, int, ftruncate(A(0, int), A(1, off_t)))
PX_DEFINE(stat, int, stat(A(0, const char *), A(1, struct stat *)))
PX_DEFINE(fstat, int, fstat(A(0, int), A(1, struct stat *)))
PX_DEFINE(unlink, int, unlink(A(0, const char *)))
PX_DEFINE(rename, int, rename(A(0, const char *), A(1, const char *)))
PX_DEFINE(mkdir, int, mkdir(A(0, const char *), A(1, mode_t)))
PX_DEFINE(connect, int,
          connect(A(0, int), A(1, const struct sockaddr *), A(2, socklen_t)))
PX_DEFINE(poll, int, poll(A(0, struct pollfd *), A(1, nfds_t), A(2, int)))

static intptr_t px_accept(struct px *p)
{
    socklen_t len = p->a[2] ? *(unsigned *)p->a[2] : 0;
    int r = accept(A(0, int), A(1, struct sockaddr *), p->a[2] ? &len : NULL);
    if (r >= 0 && p->a[2])
        *(unsigned *)p->a[2] = (unsigned)len;
    return px_ret(r);
}

static intptr_t px_getaddrinfo(struct px *p)
{
    /* getaddrinfo's own code, not -errno. */
    return getaddrinfo(A(0, const char *), A(1, const char *),
                       A(2, const struct addrinfo *), A(3, struct addrinfo **));
}

#define PX_ARGS(...) struct px p_ = {{__VA_ARGS__}, NULL}

COEXEC_API ssize_t coexec_read(int fd, void *buf, size_t n)
{
    PX_ARGS(fd, (intptr_t)buf, (intptr_t)n);
    return px_call(px_read, FOP_READ, &p_);
}

COEXEC_API ssize_t coexec_write(int fd, const void *buf, size_t n)
{
    PX_ARGS(fd, (intptr_t)buf, (intptr_t)n);
    return px_call(px_write, FOP_WRITE, &p_);
}

COEXEC_API ssize_t coexec_pread(int fd, void *buf, size_t n, off_t off)
{
    PX_ARGS(fd, (intptr_t)buf, (intptr_t)n, (intptr_t)off);
    return px_call(px_pread, FOP_PREAD, &p_);
}

COEXEC_API ssize_t coexec_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    PX_ARGS(fd, (intptr_t)buf, (intptr_t)n, (intptr_t)off);
    return px_call(px_pwrite, FOP_PWRITE, &p_);
}

COEXEC_API ssize_t coexec_readv(int fd, const struct iovec *iov, int cnt)
{
    PX_ARGS(fd, (intptr_t)iov, cnt);
    return px_call(px_readv, FOP_READV, &p_);
}

COEXEC_API ssize_t coexec_writev(int fd, const struct iovec *iov, int cnt)
{
    PX_ARGS(fd, (intptr_t)iov, cnt);
    return px_call(px_writev, FOP_WRITEV, &p_);
}

COEXEC_API int coexec_open(const char *path, int flags, mode_t mode)
{
    PX_ARGS((intptr_t)path, flags, (intptr_t)mode);
    return (int)px_call(px_open, FOP_OPEN, &p_);
}

COEXEC_API int coexec_close(int fd)
{
    PX_ARGS(fd, 0);
    return (int)px_call(px_close, FOP_CLOSE, &p_);
}

COEXEC_API int coexec_fsync(int fd)
{
    PX_ARGS(fd, 0);
    return (int)px_call(px_fsync, FOP_FSYNC, &p_);
}

COEXEC_API int coexec_fdatasync(int fd)
{
    PX_ARGS(fd, 0);
    return (int)px_call(px_fdatasync, FOP_FDATASYNC, &p_);
}

COEXEC_API int coexec_ftruncate(int fd, off_t len)
{
    PX_ARGS(fd, (intptr_t)len);
    return (int)px_call(px_ftruncate, 0, &p_);
}

COEXEC_API int coexec_stat(const char *path, struct stat *st)
{
    PX_ARGS((intptr_t)path, (intptr_t)st);
    return (int)px_call(px_stat, 0, &p_);
}

COEXEC_API int coexec_fstat(int fd, struct stat *st)
{
    PX_ARGS(fd, (intptr_t)st);
    return (int)px_call(px_fstat, 0, &p_);
}

COEXEC_API int coexec_unlink(const char *path)
{
    PX_ARGS((intptr_t)path);
    return (int)px_call(px_unlink, 0, &p_);
}

COEXEC_API int coexec_rename(const char *from, const char *to)
{
    PX_ARGS((intptr_t)from, (intptr_t)to);
    return (int)px_call(px_rename, 0, &p_);
}

COEXEC_API int coexec_mkdir(const char *path, mode_t mode)
{
    PX_ARGS((intptr_t)path, (intptr_t)mode);
    return (int)px_call(px_mkdir, 0, &p_);
}

COEXEC_API int coexec_getaddrinfo(const char *node, const char *service,
                                  const struct addrinfo *hints,
                                  struct addrinfo **res)
{
    PX_ARGS((intptr_t)node, (intptr_t)service, (intptr_t)hints, (intptr_t)res);
    return (int)px_call(px_getaddrinfo, 0, &p_);
}

COEXEC_API int coexec_connect(int fd, const struct sockaddr *addr,
                              unsigned addrlen)
{
    PX_ARGS(fd, (intptr_t)addr, (intptr_t)addrlen);
    return (int)px_call(px_connect, 0, &p_);
}

COEXEC_API int coexec_accept(int fd, struct sockaddr *addr, unsigned *addrlen)
{
    PX_ARGS(fd, (intptr_t)addr, (intptr_t)addrlen);
    return (int)px_call(px_accept, 0, &p_);
}

COEXEC_API int coexec_poll(struct pollfd *fds, unsigned long nfds, int timeout_ms)
{
    PX_ARGS((intptr_t)fds, (intptr_t)nfds, timeout_ms);
    return (int)px_call(px_poll, 0, &p_);
}
