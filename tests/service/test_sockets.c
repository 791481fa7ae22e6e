/*
 * tests/service/test_sockets.c: the sockets suite: TCP accept/connect over
 * loopback, poll over a socketpair, getaddrinfo and its own error codes,
 * ECONNREFUSED
 */
#include "service_test.h"

/* Reads exactly n bytes through coexec_read; returns bytes read. */
static long read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = coexec_read(fd, (char *)buf + got, n - got);
        if (r <= 0) {
            ch_fail_at(__FILE__, __LINE__, "coexec_read: %zd", r);
            break;
        }
        got += (size_t)r;
    }
    return (long)got;
}

typedef struct {
    int lfd;
    struct sockaddr_in addr;
    int rounds;
    atomic_int served;
    atomic_int talked;
} tcp_t;

static void acceptor_ult(void *arg)
{
    tcp_t *t = arg;
    for (int r = 0; r < t->rounds; r++) {
        struct sockaddr_in peer;
        memset(&peer, 0, sizeof peer);
        unsigned plen = sizeof peer;
        int c = coexec_accept(t->lfd, (struct sockaddr *)&peer, &plen);
        if (c < 0) {
            ch_fail_at(__FILE__, __LINE__, "coexec_accept: %d", c);
            return;
        }
        CH_CHECK_EQ(plen, sizeof peer);
        CH_CHECK_EQ(peer.sin_family, AF_INET);
        CH_CHECK_EQ(ntohl(peer.sin_addr.s_addr), INADDR_LOOPBACK);
        char msg[24], want[24];
        snprintf(want, sizeof want, "ping %06d", r);
        memset(msg, 0, sizeof msg);
        CH_CHECK_EQ(read_full(c, msg, 11), 11);
        CH_CHECK(memcmp(msg, want, 11) == 0);
        snprintf(msg, sizeof msg, "pong %06d", r);
        CH_CHECK_EQ(coexec_write(c, msg, 11), 11);
        CH_CHECK_EQ(coexec_close(c), 0);
        atomic_fetch_add(&t->served, 1);
    }
}

static void connector_ult(void *arg)
{
    tcp_t *t = arg;
    for (int r = 0; r < t->rounds; r++) {
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0) {
            ch_fail_at(__FILE__, __LINE__, "socket");
            return;
        }
        CH_CHECK_EQ(coexec_connect(s, (struct sockaddr *)&t->addr,
                                   sizeof t->addr),
                    0);
        char msg[24], want[24];
        snprintf(msg, sizeof msg, "ping %06d", r);
        CH_CHECK_EQ(coexec_write(s, msg, 11), 11);
        memset(msg, 0, sizeof msg);
        CH_CHECK_EQ(read_full(s, msg, 11), 11);
        snprintf(want, sizeof want, "pong %06d", r);
        CH_CHECK(memcmp(msg, want, 11) == 0);
        /* the server closed: end of stream */
        CH_CHECK_EQ(coexec_read(s, msg, 1), 0);
        CH_CHECK_EQ(coexec_close(s), 0);
        atomic_fetch_add(&t->talked, 1);
    }
}

static int tcp_listener(struct sockaddr_in *addr)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CU_ASSERT_FATAL(l >= 0);
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr->sin_port = 0;
    CU_ASSERT_EQUAL_FATAL(bind(l, (struct sockaddr *)addr, sizeof *addr), 0);
    CU_ASSERT_EQUAL_FATAL(listen(l, 64), 0);
    socklen_t len = sizeof *addr;
    CU_ASSERT_EQUAL_FATAL(getsockname(l, (struct sockaddr *)addr, &len), 0);
    return l;
}

static void t_sockets_tcp(void)
{
    /* one service thread to start with: the accept holds it, so the
     * connects need the service to grow */
    svc_init(NSTREAMS, 1, 0);
    tcp_t t;
    memset(&t, 0, sizeof t);
    t.lfd = tcp_listener(&t.addr);
    t.rounds = (int)ch_iters(50, 3);
    coexec_thread_t ta, tc;
    ch_spawn_on(1, acceptor_ult, &t, &ta);
    ch_spawn_on(2, connector_ult, &t, &tc);
    CH_WAIT(atomic_load(&t.served) == t.rounds &&
            atomic_load(&t.talked) == t.rounds);
    CH_ASSERT_OK(coexec_thread_free(&ta));
    CH_ASSERT_OK(coexec_thread_free(&tc));
    CH_ASSERT_EQ(atomic_load(&t.served), t.rounds);
    CH_ASSERT_EQ(atomic_load(&t.talked), t.rounds);
    close(t.lfd);
    ch_finalize();
}

static void refused_ult(void *arg)
{
    struct sockaddr_in *addr = arg;
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CH_CHECK(s >= 0);
    CH_CHECK_EQ(coexec_connect(s, (struct sockaddr *)addr, sizeof *addr),
                -ECONNREFUSED);
    close(s);
}

static void t_sockets_refused(void)
{
    /* a port that was bound and released again: nothing listens there */
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CU_ASSERT_FATAL(s >= 0);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CU_ASSERT_EQUAL_FATAL(bind(s, (struct sockaddr *)&addr, sizeof addr), 0);
    socklen_t len = sizeof addr;
    CU_ASSERT_EQUAL_FATAL(getsockname(s, (struct sockaddr *)&addr, &len), 0);
    close(s);
    svc_init(2, 0, 0);
    CH_ASSERT_OK(ch_run_ult_in(ch_main_pool(1), refused_ult, &addr));
    ch_run_external(refused_ult, &addr);
    ch_finalize();
}

typedef struct {
    int fd;
    int rc_empty, rc_timeout, rc_wait, rc_out;
    short revents;
    long n;
    char buf[8];
    atomic_int polling;
} poll_t;

static void poll_ult(void *arg)
{
    poll_t *p = arg;
    struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
    p->rc_empty = coexec_poll(&pfd, 1, 0);
    pfd.revents = 0;
    p->rc_timeout = coexec_poll(&pfd, 1, 5);
    struct pollfd out = {.fd = p->fd, .events = POLLOUT};
    p->rc_out = coexec_poll(&out, 1, -1);
    CH_CHECK(out.revents & POLLOUT);
    atomic_store(&p->polling, 1);
    pfd.revents = 0;
    p->rc_wait = coexec_poll(&pfd, 1, -1);
    p->revents = pfd.revents;
    p->n = coexec_read(p->fd, p->buf, sizeof p->buf);
}

static void poll_writer_ult(void *arg)
{
    int *fd = arg;
    CH_CHECK_EQ(coexec_write(*fd, "wake", 4), 4);
}

static void t_sockets_poll(void)
{
    int sv[2];
    CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
                                     sv),
                          0);
    svc_init(NSTREAMS, 1, 0);
    int rounds = (int)ch_iters(20, 2);
    for (int i = 0; i < rounds; i++) {
        poll_t p;
        memset(&p, 0, sizeof p);
        p.fd = sv[0];
        p.rc_empty = p.rc_timeout = p.rc_wait = p.rc_out = -999;
        coexec_thread_t tp;
        ch_spawn_on(1, poll_ult, &p, &tp);
        CH_WAIT(atomic_load(&p.polling));
        CH_ASSERT_OK(ch_run_ult_in(ch_main_pool(2), poll_writer_ult, &sv[1]));
        CH_ASSERT_OK(coexec_thread_free(&tp));
        CH_ASSERT_EQ(p.rc_empty, 0);
        CH_ASSERT_EQ(p.rc_timeout, 0);
        CH_ASSERT_EQ(p.rc_out, 1);
        CH_ASSERT_EQ(p.rc_wait, 1);
        CU_ASSERT(p.revents & POLLIN);
        CH_ASSERT_EQ(p.n, 4);
        CU_ASSERT(memcmp(p.buf, "wake", 4) == 0);
    }
#if !CH_SANITIZER
    /* bad arguments come back as -errno (the kernel refuses nfds above
     * RLIMIT_NOFILE before reading; sanitizers' poll reads them all, and
     * so does valgrind's check of the call's arguments) */
    struct pollfd bad = {.fd = sv[0], .events = POLLIN};
    if (!ch_on_valgrind())
        CH_ASSERT_EQ(coexec_poll(&bad, (unsigned long)1 << 30, 0), -EINVAL);
#endif
    ch_finalize();
    close(sv[0]);
    close(sv[1]);
}

typedef struct {
    int rc_ok, rc_port, rc_bad;
    int family;
    uint32_t addr;
    uint16_t port;
} gai_t;

static void gai_job(void *arg)
{
    gai_t *g = arg;
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo *res = NULL;
    g->rc_ok = coexec_getaddrinfo("127.0.0.1", NULL, &hints, &res);
    if (g->rc_ok == 0 && res) {
        g->family = res->ai_family;
        if (res->ai_family == AF_INET)
            g->addr = ntohl(
                ((struct sockaddr_in *)(void *)res->ai_addr)->sin_addr.s_addr);
        freeaddrinfo(res);
    }
    res = NULL;
    g->rc_port = coexec_getaddrinfo("127.0.0.1", "8080", &hints, &res);
    if (g->rc_port == 0 && res) {
        g->port = ntohs(((struct sockaddr_in *)(void *)res->ai_addr)->sin_port);
        freeaddrinfo(res);
    }
    res = NULL;
    hints.ai_flags = AI_NUMERICHOST;
    g->rc_bad = coexec_getaddrinfo("not a host", NULL, &hints, &res);
    if (g->rc_bad == 0 && res)
        freeaddrinfo(res);
}

static void gai_check(const gai_t *g)
{
    CH_ASSERT_EQ(g->rc_ok, 0);
    CH_ASSERT_EQ(g->family, AF_INET);
    CH_ASSERT_EQ(g->addr, INADDR_LOOPBACK);
    CH_ASSERT_EQ(g->rc_port, 0);
    CH_ASSERT_EQ(g->port, 8080);
    CH_ASSERT_EQ(g->rc_bad, EAI_NONAME);
}

static void t_sockets_getaddrinfo(void)
{
    gai_t g;
    memset(&g, 0, sizeof g);
    gai_job(&g); /* without the runtime */
    gai_check(&g);
    svc_init(NSTREAMS, 0, 0);
    uint64_t c0 = svc_completed();
    memset(&g, 0, sizeof g);
    CH_ASSERT_OK(ch_run_ult_in(ch_main_pool(3), gai_job, &g));
    gai_check(&g);
    CU_ASSERT(CH_WAIT(svc_completed() - c0 >= 3));
    memset(&g, 0, sizeof g);
    gai_job(&g); /* the main ULT */
    gai_check(&g);
    memset(&g, 0, sizeof g);
    ch_run_external(gai_job, &g);
    gai_check(&g);
    ch_finalize();
}

/* ======================================================================= */

const ch_test_t service_sockets_tests[] = {
    {"tcp", t_sockets_tcp},
    {"refused", t_sockets_refused},
    {"poll", t_sockets_poll},
    {"getaddrinfo", t_sockets_getaddrinfo},
    {NULL, NULL}};
