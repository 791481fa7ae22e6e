/*
 * src/service/ring/uring.c: the io_uring path of the service stream: one
 * thread owns one ring and carries the POSIX wrappers' file calls in
 * batches (built when CMake found liburing).
 *
 * Room plaque.
 *  - Ownership: the ring, its lists and every request taken off the inbox
 *    belong to the ring thread; nothing else touches them, so the ring
 *    needs no lock (and is set up single-issuer where the kernel can).
 *    Other threads share only `inbox` (a lock-free stack, one CAS to push),
 *    `sleeping`, `cmd` and `busy`.
 *  - A round: take the whole inbox with one exchange and append it, oldest
 *    first, to the waiting list; issue what may go (an SQE each), submit
 *    the batch with one io_uring_submit, reap the completions and complete
 *    their requests through coexec__rq_complete. Idle, the thread spins
 *    spin_ns on the inbox and the completion queue, then sleeps in
 *    io_uring_enter until a completion comes; a poll on an eventfd (the
 *    doorbell) is armed then, and a submitter that sees `sleeping` writes
 *    it (Dekker: both sides seq_cst).
 *  - Ordering: read, write, readv and writev use the file position, which
 *    the kernel does not lock for io_uring as it does for the system calls:
 *    one such call per (fd, direction) is in the kernel at a time, later
 *    ones wait in order (a read blocked on a socket does not hold back a
 *    write to it). pread and pwrite check first what the system calls
 *    check (negative offset: EINVAL; a pipe or socket: ESPIPE), which
 *    io_uring does not. At most MAX_FLY requests are in the kernel, fewer
 *    than the completion queue holds, so no completion is ever dropped.
 *  - Finalize: CMD_CLOSE cancels what waits; the grace period lets the
 *    kernel finish the rest; CMD_CANCEL sends IORING_OP_ASYNC_CANCEL for
 *    each request in the kernel (those come back -ECANCELED or -EINTR and
 *    complete as COEXEC_ECANCELED); CMD_ABANDON completes whatever is still
 *    there with COEXEC_ECANCELED and ignores every later completion;
 *    CMD_STOP makes the thread release the ring and exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <liburing.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "arch/clock.h"
#include "arch/futex.h"
#include "base/lfstack.h"
#include "base/list.h"
#include "base/osthread.h"
#include "base/valgrind.h"
#include "service/ring.h"

#define RING_ENTRIES 256u
#define MAX_FLY 448u    /* below the 512 completion entries */
#define REAP_BATCH 64u
#define UD_DOORBELL 1u  /* user_data of the doorbell poll; requests are */
#define UD_CANCEL 2u    /* aligned, so neither is a request's address */
#define MAX_RW 0x7ffff000u /* what the kernel moves in one read or write */
#define ABANDON_NS 1000000000ull /* after ASYNC_CANCEL, before abandoning */

enum { OWN_EFD = 1u << 0, OWN_RING = 1u << 1 };

enum {
    CMD_CLOSE = 1u << 0,   /* cancel what is not in the kernel */
    CMD_CANCEL = 1u << 1,  /* cancel what is */
    CMD_ABANDON = 1u << 2, /* complete what remains, ignore the kernel */
    CMD_STOP = 1u << 3
};

static struct {
    atom_ptr_t inbox CACHE_ALIGNED;
    atom_u32_t sleeping CACHE_ALIGNED;
    atom_u32_t cmd;
    atom_u32_t done_cmd; /* commands the thread carried out */
    atom_u32_t busy;     /* pushed and not completed */
    atom_u32_t state;    /* 0 starting, 1 running, 2 failed, 3 gone */
    atom_u64_t batches, sqes; /* io_uring_submit calls and what they took */
    /* OWN_*: set once the descriptor is open, cleared before it is closed,
     * so a forked child closes only what is open (coexec__ring_atfork_child). */
    atom_u32_t owned;
    int efd;
    unsigned kinds;
    atom_u32_t running; /* read by any thread (the busy count, tests) */
    int start_rc;
    char why[128];
    pthread_t thread;
    int cpu;
    uint64_t spin_ns;
    /* The ring thread's alone. */
    struct io_uring ring CACHE_ALIGNED;
    struct request *wait_head, *wait_tail; /* not in the kernel yet */
    struct request *fly_head, *fly_tail;   /* in the kernel */
    unsigned nfly;
    int armed;     /* the doorbell poll is in the kernel */
    int abandoned; /* completions no longer name live requests */
} rg = {.efd = -1};

/* ---- lists (ring thread) ---------------------------------------------------- */

static void rq_append(struct request **head, struct request **tail,
                        struct request *r)
{
    DL_PUSH_TAIL(*head, *tail, r);
}

static void rq_unlink(struct request **head, struct request **tail,
                        struct request *r)
{
    DL_UNLINK(*head, *tail, r);
}

/* ---- completion --------------------------------------------------------------- */

static void done(struct request *r, intptr_t v, uint32_t fin)
{
    coexec__rq_complete(r, v, fin); /* r may be gone now */
    atom_fsub_sc_u32(&rg.busy, 1);
    coexec__service_progress();
}

static void cancel_list(struct request **head, struct request **tail)
{
    while (*head) {
        struct request *r = *head;
        rq_unlink(head, tail, r);
        done(r, -ECANCELED, RQ_CANCELED);
    }
}

/* ---- issuing (ring thread) ------------------------------------------------------- */

static const struct fop *fop_of(const struct request *r) { return r->arg; }

/* Calls that use the file position: (fd, direction) names their lane. */
static bool uses_pos(int kind)
{
    return kind == FOP_READ || kind == FOP_WRITE || kind == FOP_READV ||
           kind == FOP_WRITEV;
}

static bool same_lane(const struct fop *a, const struct fop *b)
{
    bool ra = a->kind == FOP_READ || a->kind == FOP_READV;
    bool rb = b->kind == FOP_READ || b->kind == FOP_READV;
    return uses_pos(b->kind) && ra == rb && a->a[0] == b->a[0];
}

/* True when a call of f's lane is in the kernel, or waits before upto. */
static bool lane_taken(const struct fop *f, const struct request *upto)
{
    for (const struct request *q = rg.fly_head; q; q = q->next)
        if (same_lane(f, fop_of(q)))
            return true;
    for (const struct request *q = rg.wait_head; q != upto; q = q->next)
        if (same_lane(f, fop_of(q)))
            return true;
    return false;
}

static unsigned rw_len(intptr_t n)
{
    return (size_t)n > MAX_RW ? MAX_RW : (unsigned)n;
}

/* What the system call would refuse before doing anything and io_uring
 * would not: 0, or -errno to complete with at once. */
static int precheck(const struct fop *f)
{
    switch (f->kind) {
    case FOP_PREAD:
    case FOP_PWRITE:
        if ((off_t)f->a[3] < 0)
            return -EINVAL;
        /* Not seekable (pipe, socket): pread and pwrite say ESPIPE; a
         * positioned io_uring read would simply read. */
        if (lseek((int)f->a[0], 0, SEEK_CUR) < 0)
            return -errno;
        return 0;
    case FOP_READV:
    case FOP_WRITEV:
        return (int)f->a[2] < 0 || (int)f->a[2] > IOV_MAX ? -EINVAL : 0;
    default:
        return 0;
    }
}

static void prep(struct io_uring_sqe *sqe, const struct fop *f)
{
    int fd = (int)f->a[0];
    const uint64_t cur = (uint64_t)-1; /* the file position */
    switch (f->kind) {
    case FOP_READ:
        io_uring_prep_read(sqe, fd, (void *)f->a[1], rw_len(f->a[2]), cur);
        break;
    case FOP_WRITE:
        io_uring_prep_write(sqe, fd, (const void *)f->a[1], rw_len(f->a[2]),
                            cur);
        break;
    case FOP_PREAD:
        io_uring_prep_read(sqe, fd, (void *)f->a[1], rw_len(f->a[2]),
                           (uint64_t)f->a[3]);
        break;
    case FOP_PWRITE:
        io_uring_prep_write(sqe, fd, (const void *)f->a[1], rw_len(f->a[2]),
                            (uint64_t)f->a[3]);
        break;
    case FOP_READV:
        io_uring_prep_readv(sqe, fd, (const struct iovec *)f->a[1],
                            (unsigned)f->a[2], cur);
        break;
    case FOP_WRITEV:
        io_uring_prep_writev(sqe, fd, (const struct iovec *)f->a[1],
                             (unsigned)f->a[2], cur);
        break;
    case FOP_OPEN:
        io_uring_prep_openat(sqe, AT_FDCWD, (const char *)f->a[0],
                             (int)f->a[1], (mode_t)f->a[2]);
        break;
    case FOP_CLOSE:
        io_uring_prep_close(sqe, fd);
        break;
    case FOP_FSYNC:
        io_uring_prep_fsync(sqe, fd, 0);
        break;
    default: /* FOP_FDATASYNC */
        io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
        break;
    }
}

/* An SQE, flushing a full submission queue first; NULL if it stays full. */
static struct io_uring_sqe *get_sqe(void)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&rg.ring);
    if (!sqe && io_uring_submit(&rg.ring) >= 0)
        sqe = io_uring_get_sqe(&rg.ring);
    return sqe;
}

/* Issues the waiting requests that may go, oldest first. */
static void issue(bool closing)
{
    struct request *r = rg.wait_head;
    while (r && rg.nfly < MAX_FLY) {
        struct request *next = r->next;
        const struct fop *f = fop_of(r);
        if (closing) {
            rq_unlink(&rg.wait_head, &rg.wait_tail, r);
            done(r, -ECANCELED, RQ_CANCELED);
        } else if (!uses_pos(f->kind) || !lane_taken(f, r)) {
            int e = precheck(f);
            struct io_uring_sqe *sqe = e ? NULL : get_sqe();
            if (!e && !sqe)
                return; /* the kernel takes nothing now: next round */
            rq_unlink(&rg.wait_head, &rg.wait_tail, r);
            if (e) {
                done(r, e, RQ_DONE);
            } else {
                prep(sqe, f);
                io_uring_sqe_set_data(sqe, r);
                rq_append(&rg.fly_head, &rg.fly_tail, r);
                rg.nfly++;
            }
        }
        r = next;
    }
}

/* One ASYNC_CANCEL per request in the kernel. */
static void cancel_flying(void)
{
    for (struct request *r = rg.fly_head; r; r = r->next) {
        struct io_uring_sqe *sqe = get_sqe();
        if (!sqe)
            break;
        io_uring_prep_cancel(sqe, r, 0);
        io_uring_sqe_set_data64(sqe, UD_CANCEL);
    }
}

/* ---- completions (ring thread) ------------------------------------------------------ */

static void doorbell_reset(void)
{
    uint64_t v;
    IGNORE_RESULT(read(rg.efd, &v, sizeof v));
    rg.armed = 0;
}

static unsigned reap(bool cancelling)
{
    struct io_uring_cqe *cqes[REAP_BATCH];
    unsigned n = io_uring_peek_batch_cqe(&rg.ring, cqes, REAP_BATCH);
    for (unsigned i = 0; i < n; i++) {
        uint64_t ud = cqes[i]->user_data;
        intptr_t res = cqes[i]->res;
        if (ud == UD_DOORBELL) {
            doorbell_reset();
            continue;
        }
        if (ud == UD_CANCEL || rg.abandoned)
            continue;
        struct request *r = (struct request *)(uintptr_t)ud;
        rq_unlink(&rg.fly_head, &rg.fly_tail, r);
        rg.nfly--;
        if (cancelling && (res == -ECANCELED || res == -EINTR))
            done(r, -ECANCELED, RQ_CANCELED);
        else
            done(r, res, RQ_DONE);
    }
    io_uring_cq_advance(&rg.ring, n);
    return n;
}

/* ---- the thread ------------------------------------------------------------------------ */

/* Sleeps until a completion, the doorbell or a command comes. */
static void ring_sleep(uint32_t seen_cmd)
{
    atom_store_sc_u32(&rg.sleeping, 1);
    /* seq_cst: against the push (or command) and the sleeping check in
     * ring_kick. */
    if (!atom_load_sc_ptr(&rg.inbox) &&
        atom_load_sc_u32(&rg.cmd) == seen_cmd) {
        if (!rg.armed) {
            struct io_uring_sqe *sqe = get_sqe();
            if (sqe) {
                io_uring_prep_poll_add(sqe, rg.efd, POLLIN);
                io_uring_sqe_set_data64(sqe, UD_DOORBELL);
                rg.armed = 1;
            }
        }
        if (rg.armed)
            IGNORE_RESULT(io_uring_submit_and_wait(&rg.ring, 1));
    }
    atom_store_rel_u32(&rg.sleeping, 0);
}

/* Moves the inbox, oldest first, to the end of the waiting list. */
static bool take_inbox(void)
{
    /* Only read while empty: the submitters keep the line. */
    if (!atom_load_rlx_ptr(&rg.inbox))
        return false;
    struct request *rev = lfs_take_all(&rg.inbox);
    LFS_REVERSE(rev);
    while (rev) {
        struct request *n = rev->next;
        rq_append(&rg.wait_head, &rg.wait_tail, rev);
        rev = n;
    }
    return true;
}

static void ring_loop(void)
{
    uint32_t handled = 0;
    uint64_t idle_since = 0;
    for (;;) {
        uint32_t cmd = atom_load_acq_u32(&rg.cmd);
        bool work = take_inbox();
        if (rg.wait_head)
            issue(cmd & CMD_CLOSE);
        if ((cmd & CMD_CANCEL) && !(handled & CMD_CANCEL))
            cancel_flying();
        if (io_uring_sq_ready(&rg.ring)) {
            int k = io_uring_submit(&rg.ring);
            if (k > 0) {
                atom_store_rlx_u64(&rg.batches,
                                   atom_load_rlx_u64(&rg.batches) + 1);
                atom_store_rlx_u64(&rg.sqes,
                                   atom_load_rlx_u64(&rg.sqes) + (unsigned)k);
            }
        }
        work |= reap(cmd & CMD_CANCEL) != 0;
        if ((cmd & CMD_ABANDON) && !(handled & CMD_ABANDON)) {
            cancel_list(&rg.wait_head, &rg.wait_tail);
            cancel_list(&rg.fly_head, &rg.fly_tail);
            rg.nfly = 0;
            rg.abandoned = 1;
        }
        if (cmd != handled) {
            handled = cmd;
            atom_store_rel_u32(&rg.done_cmd, cmd);
            coexec__futex_wake(&rg.done_cmd, 1);
            work = true;
        }
        if (cmd & CMD_STOP) {
            /* Nothing should be left (finalize cancelled or abandoned it);
             * if something is, it is abandoned like the rest. */
            cancel_list(&rg.wait_head, &rg.wait_tail);
            if (rg.fly_head) {
                cancel_list(&rg.fly_head, &rg.fly_tail);
                rg.abandoned = 1;
            }
            return;
        }
        uint64_t now = clock_now_ns();
        if (work || !idle_since) {
            idle_since = now;
            continue;
        }
        if (now - idle_since < rg.spin_ns) {
            cpu_relax();
            continue;
        }
        ring_sleep(handled);
        idle_since = 0;
    }
}

/* Creates the ring and learns what the kernel supports. */
static int ring_setup(void)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    /* One thread submits and reaps: tell the kernel, where it knows how. */
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN |
              IORING_SETUP_TASKRUN_FLAG;
    int rc = io_uring_queue_init_params(RING_ENTRIES, &rg.ring, &p);
    if (rc == -EINVAL) {
        memset(&p, 0, sizeof p);
        rc = io_uring_queue_init_params(RING_ENTRIES, &rg.ring, &p);
    }
    if (rc < 0) {
        const char *what =
            rc == -ENOSYS ? "the kernel has no io_uring"
            : rc == -EPERM ? "io_uring is not permitted (a seccomp filter, "
                             "or kernel.io_uring_disabled)"
            : rc == -ENOMEM ? "no memory for a ring (RLIMIT_MEMLOCK?)"
                            : "io_uring_setup failed";
        snprintf(rg.why, sizeof rg.why, "%s (errno %d)", what, -rc);
        return rc;
    }
    struct io_uring_probe *probe = io_uring_get_probe_ring(&rg.ring);
    if (!probe || !io_uring_opcode_supported(probe, IORING_OP_POLL_ADD) ||
        !io_uring_opcode_supported(probe, IORING_OP_ASYNC_CANCEL)) {
        snprintf(rg.why, sizeof rg.why,
                 "the kernel's io_uring lacks what the service needs");
        if (probe)
            io_uring_free_probe(probe);
        io_uring_queue_exit(&rg.ring);
        return COEXEC_ENOSYS;
    }
    static const struct {
        int op;
        unsigned kinds;
    } map[] = {
        {IORING_OP_READ, 1u << FOP_READ | 1u << FOP_PREAD},
        {IORING_OP_WRITE, 1u << FOP_WRITE | 1u << FOP_PWRITE},
        {IORING_OP_READV, 1u << FOP_READV},
        {IORING_OP_WRITEV, 1u << FOP_WRITEV},
        {IORING_OP_OPENAT, 1u << FOP_OPEN},
        {IORING_OP_CLOSE, 1u << FOP_CLOSE},
        {IORING_OP_FSYNC, 1u << FOP_FSYNC | 1u << FOP_FDATASYNC},
    };
    unsigned kinds = 0;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (io_uring_opcode_supported(probe, map[i].op))
            kinds |= map[i].kinds;
    io_uring_free_probe(probe);
    /* Without it offset -1 is no "current position": those stay on the
     * thread path. */
    if (!(p.features & IORING_FEAT_RW_CUR_POS))
        kinds &= ~(1u << FOP_READ | 1u << FOP_WRITE | 1u << FOP_READV |
                   1u << FOP_WRITEV);
    rg.kinds = kinds;
    return COEXEC_OK;
}

static void *ring_main(void *arg)
{
    (void)arg;
    if (rg.cpu >= 0)
        coexec__affinity_bind_self(rg.cpu);
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    rg.start_rc = ring_setup();
    if (rg.start_rc == COEXEC_OK)
        atom_for_rel_u32(&rg.owned, OWN_RING);
    atom_store_rel_u32(&rg.state, rg.start_rc == COEXEC_OK ? 1 : 2);
    coexec__futex_wake(&rg.state, 1);
    if (rg.start_rc != COEXEC_OK)
        return NULL;
    ring_loop();
    atom_fand_rel_u32(&rg.owned, ~OWN_RING);
    io_uring_queue_exit(&rg.ring);
    /* The last touch of rg: a detached thread may still be inside the
     * kernel's exit, waiting for requests it could not cancel. */
    atom_store_rel_u32(&rg.state, 3);
    coexec__futex_wake(&rg.state, 1);
    return NULL;
}

/* Wakes the ring thread if it sleeps (Dekker with ring_sleep). */
static void ring_kick(void)
{
    if (atom_load_sc_u32(&rg.sleeping)) {
        int saved = errno; /* the library never sets errno */
        uint64_t one = 1;
        IGNORE_RESULT(write(rg.efd, &one, sizeof one));
        errno = saved;
    }
}

static void efd_close(void)
{
    atom_fand_rel_u32(&rg.owned, ~OWN_EFD);
    close(rg.efd);
    rg.efd = -1;
}

/* ---- the contract (ring.h) --------------------------------------------------------------- */

int coexec__ring_start(int cpu, uint64_t spin_ns, const char **why)
{
    atom_store_rel_u32(&rg.running, 0);
    rg.kinds = 0;
    rg.why[0] = '\0';
    atom_store_rlx_ptr(&rg.inbox, NULL);
    atom_store_rlx_u32(&rg.sleeping, 0);
    atom_store_rlx_u32(&rg.cmd, 0);
    atom_store_rlx_u32(&rg.done_cmd, 0);
    atom_store_rlx_u32(&rg.busy, 0);
    atom_store_rlx_u32(&rg.state, 0);
    atom_store_rlx_u64(&rg.batches, 0);
    atom_store_rlx_u64(&rg.sqes, 0);
    rg.wait_head = rg.wait_tail = rg.fly_head = rg.fly_tail = NULL;
    rg.nfly = 0;
    rg.armed = 0;
    rg.abandoned = 0;
    rg.cpu = cpu;
    rg.spin_ns = spin_ns;
    if (coexec__on_valgrind()) {
        /* Valgrind runs one thread at a time and keeps its lock across an
         * io_uring_enter that waits: the ring thread's sleep would stop
         * every other thread for good. It cannot see the kernel fill
         * buffers through the ring either. */
        snprintf(rg.why, sizeof rg.why,
                 "the process runs under valgrind, which cannot run io_uring "
                 "(COEXEC_ENOSYS)");
        *why = rg.why;
        return COEXEC_ENOSYS;
    }
    rg.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (rg.efd < 0) {
        int e = errno;
        snprintf(rg.why, sizeof rg.why, "eventfd failed (errno %d)", e);
        *why = rg.why;
        return e == ENOMEM ? COEXEC_ENOMEM : COEXEC_EAGAIN;
    }
    atom_for_rel_u32(&rg.owned, OWN_EFD);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 * 1024);
    int e = coexec__os_thread_create(&rg.thread, &a, ring_main, NULL,
                                     "coexec-ring", -1, 0);
    pthread_attr_destroy(&a);
    if (e) {
        snprintf(rg.why, sizeof rg.why, "cannot start its thread (errno %d)",
                 e);
        efd_close();
        *why = rg.why;
        return e == ENOMEM ? COEXEC_ENOMEM : COEXEC_EAGAIN;
    }
    uint32_t s;
    while ((s = atom_load_acq_u32(&rg.state)) == 0)
        coexec__futex_wait(&rg.state, 0, NULL);
    if (s != 1) {
        pthread_join(rg.thread, NULL);
        efd_close();
        *why = rg.why;
        return rg.start_rc;
    }
    atom_store_rel_u32(&rg.running, 1);
    return COEXEC_OK;
}

unsigned coexec__ring_kinds(void) { return atom_load_acq_u32(&rg.running) ? rg.kinds : 0; }

void coexec__ring_push(struct request *r)
{
    atom_fadd_sc_u32(&rg.busy, 1);
    /* seq_cst: ordered before the sleeping check in ring_kick. */
    LFS_PUSH(&rg.inbox, r);
    ring_kick();
}

uint32_t coexec__ring_busy(void)
{
    return atom_load_acq_u32(&rg.running) ? atom_load_acq_u32(&rg.busy) : 0;
}

/* Gives the ring thread a command; waits until it carried it out when
 * wait (it never blocks anywhere but in its sleep, which this ends). */
static void command(uint32_t c, bool wait)
{
    atom_for_sc_u32(&rg.cmd, c);
    ring_kick();
    uint32_t d;
    while (wait && ((d = atom_load_acq_u32(&rg.done_cmd)) & c) != c) {
        struct timespec ts = {0, 1000000};
        coexec__futex_wait(&rg.done_cmd, d, &ts);
    }
}

void coexec__ring_cancel_queued(void)
{
    if (!atom_load_acq_u32(&rg.running))
        return;
    /* What is on the inbox now is cancelled here; what the thread already
     * took, and anything pushed later, by the thread. */
    struct request *r = lfs_take_all(&rg.inbox);
    while (r) {
        struct request *n = r->next;
        r->next = NULL;
        done(r, -ECANCELED, RQ_CANCELED);
        r = n;
    }
    command(CMD_CLOSE, true);
}

int coexec__ring_cancel_all(void (*pause)(void))
{
    if (!atom_load_acq_u32(&rg.running) || !atom_load_acq_u32(&rg.busy))
        return 0;
    command(CMD_CANCEL, true);
    uint64_t until = clock_now_ns() + ABANDON_NS;
    while (atom_load_acq_u32(&rg.busy) && clock_now_ns() < until)
        pause();
    int n = (int)atom_load_acq_u32(&rg.busy);
    if (n)
        command(CMD_ABANDON, true);
    return n;
}

void coexec__ring_stop(void)
{
    if (!atom_load_acq_u32(&rg.running))
        return;
    command(CMD_STOP, false);
    uint32_t s;
    while ((s = atom_load_acq_u32(&rg.state)) != 3)
        coexec__futex_wait(&rg.state, s, NULL);
    /* Abandoned requests may keep the thread in the kernel's exit: it is
     * not waited for then. */
    if (rg.abandoned)
        pthread_detach(rg.thread);
    else
        pthread_join(rg.thread, NULL);
    /* Requests that slipped in after close. */
    struct request *r = lfs_take_all(&rg.inbox);
    while (r) {
        struct request *n = r->next;
        done(r, -ECANCELED, RQ_CANCELED);
        r = n;
    }
    efd_close();
    atom_store_rel_u32(&rg.running, 0);
    rg.kinds = 0;
}

void coexec__ring_stats(uint64_t *batches, uint64_t *sqes)
{
    *batches = atom_load_rlx_u64(&rg.batches);
    *sqes = atom_load_rlx_u64(&rg.sqes);
}

void coexec__ring_atfork_child(void)
{
    /* The ring thread is gone; the ring's mappings and descriptors are
     * released here, as far as they were whole at fork. */
    uint32_t own = atom_load_acq_u32(&rg.owned);
    if (own & OWN_RING)
        io_uring_queue_exit(&rg.ring);
    if (own & OWN_EFD)
        close(rg.efd);
    atom_store_rlx_u32(&rg.owned, 0);
    atom_store_rlx_ptr(&rg.inbox, NULL);
    rg.efd = -1;
    atom_store_rel_u32(&rg.running, 0);
    rg.kinds = 0;
}
