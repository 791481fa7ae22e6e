/*
 * tests/service/test_service_config.c: the config suite: defaults,
 * environment and cfg fields, malformed values (COEXEC_EENV /
 * COEXEC_EINVAL), coexec_service_get_info
 */
#include "service_test.h"

static void t_config_defaults(void)
{
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    CH_ASSERT_EQ(cfg.service_threads, 1);
    CH_ASSERT_EQ(cfg.service_max_threads, 16);
    CH_ASSERT_EQ(cfg.service_spin_us, 50);
    CH_ASSERT_EQ(cfg.service_cpus[0], 0);

    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    coexec_config_t got;
    CH_ASSERT_OK(coexec_get_config(&got));
    CH_ASSERT_EQ(got.service_threads, 1);
    CH_ASSERT_EQ(got.service_max_threads, 16);
    CH_ASSERT_EQ(got.service_spin_us, 50);
    coexec_service_info_t info = svc_info();
    CH_ASSERT_EQ(info.threads, 1);
    CU_ASSERT(info.idle >= 0 && info.idle <= info.threads);
    CH_ASSERT_EQ(info.completed, 0);
    CU_ASSERT_PTR_NOT_NULL(info.io_path);
    if (info.io_path) {
        CU_ASSERT(info.io_path[0] != 0);
        printf("\n    io_path \"%s\", cpu %d, shares_cpu %d\n", info.io_path,
               info.cpu, info.shares_cpu);
    }
    CU_ASSERT(info.shares_cpu == 0 || info.shares_cpu == 1);
    intptr_t ret = 0;
    CH_ASSERT_OK(coexec_offload(ret_arg_fn, (void *)(intptr_t)1, &ret));
    CU_ASSERT(CH_WAIT(svc_completed() >= 1));
    /* arguments */
    CH_ASSERT_RC(coexec_service_get_info(NULL), COEXEC_EINVAL);
    memset(&info, 0, sizeof info);
    CH_ASSERT_RC(coexec_service_get_info(&info), COEXEC_EINVAL);
    ch_finalize();
}

static void t_config_env_malformed(void)
{
    static const struct {
        const char *var, *val;
    } bad[] = {
        {"COEXEC_SERVICE_THREADS", "abc"},
        {"COEXEC_SERVICE_THREADS", "2x"},
        {"COEXEC_SERVICE_THREADS", "1.5"},
        {"COEXEC_SERVICE_MAX_THREADS", "many"},
        {"COEXEC_SERVICE_MAX_THREADS", "4z"},
        {"COEXEC_SERVICE_SPIN_US", "fast"},
        {"COEXEC_SERVICE_CPUS", "abc"},
        {"COEXEC_SERVICE_CPUS", "1,x"},
        {"COEXEC_SERVICE_CPUS", "0-"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[2048];
        if (!ch_init_env_refused(bad[i].var, bad[i].val, err, sizeof err))
            continue;
        CU_ASSERT_PTR_NOT_NULL(strstr(coexec_init_error(), bad[i].var));
        CH_ASSERT_EQ(ch_count_lines(err, bad[i].var), 1);
    }
    /* init works again afterwards */
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    CH_ASSERT_EQ(svc_info().threads, 1);
    ch_finalize();
}

static void t_config_env_values(void)
{
    setenv("COEXEC_SERVICE_THREADS", "3", 1);
    setenv("COEXEC_SERVICE_MAX_THREADS", "5", 1);
    setenv("COEXEC_SERVICE_SPIN_US", "7", 1);
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.num_xstreams = 2;
    cfg.service_threads = 2; /* the environment wins */
    int rc = coexec_init(&cfg);
    unsetenv("COEXEC_SERVICE_THREADS");
    unsetenv("COEXEC_SERVICE_MAX_THREADS");
    unsetenv("COEXEC_SERVICE_SPIN_US");
    CH_ASSERT_RC_FATAL(rc, COEXEC_OK);
    coexec_config_t got;
    CH_ASSERT_OK(coexec_get_config(&got));
    CH_ASSERT_EQ(got.service_threads, 3);
    CH_ASSERT_EQ(got.service_max_threads, 5);
    CH_ASSERT_EQ(got.service_spin_us, 7);
    CU_ASSERT(CH_WAIT(svc_info().threads == 3));
    coexec_service_info_t info = svc_info();
    CH_ASSERT_EQ(info.threads, 3);
    CU_ASSERT_PTR_NOT_NULL(info.io_path);
    /* three threads are kept when idle */
    intptr_t ret = 0;
    for (int i = 0; i < 10; i++)
        CH_ASSERT_OK(coexec_offload(ret_arg_fn, (void *)(intptr_t)i, &ret));
    ch_linger(120);
    CH_ASSERT_EQ(svc_info().threads, 3);
    ch_finalize();

    /* cfg fields alone */
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.num_xstreams = 2;
    cfg.service_threads = 2;
    cfg.service_max_threads = 4;
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    CH_ASSERT_OK(coexec_get_config(&got));
    CH_ASSERT_EQ(got.service_threads, 2);
    CH_ASSERT_EQ(got.service_max_threads, 4);
    CU_ASSERT(CH_WAIT(svc_info().threads == 2));
    ch_finalize();
}

static void t_config_bad_cfg(void)
{
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.service_threads = -1;
    CH_ASSERT_RC(coexec_init(&cfg), COEXEC_EINVAL);
    CH_ASSERT_EQ(coexec_initialized(), 0);
    CH_ASSERT_OK(coexec_config_init(&cfg));
    snprintf(cfg.service_cpus, sizeof cfg.service_cpus, "abc");
    CH_ASSERT_RC(coexec_init(&cfg), COEXEC_EINVAL);
    CH_ASSERT_EQ(coexec_initialized(), 0);
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    ch_finalize();
}

/* The last CPU the process may run on. */
static int last_allowed_cpu(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            last = c;
    return last;
}

static int first_allowed_cpu(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            return c;
    return -1;
}

/* 1 when some stream is pinned to cpu. */
static int stream_on_cpu(int cpu)
{
    int num = 0, found = 0;
    CH_CHECK_RC(coexec_xstream_get_num(&num), COEXEC_OK);
    for (int r = 0; r < num; r++) {
        int c = -2;
        CH_CHECK_RC(coexec_xstream_get_cpu(ch_xstream(r), &c), COEXEC_OK);
        found |= c == cpu;
    }
    return found;
}

static intptr_t cpu_fn(void *arg)
{
    (void)arg;
    return sched_getcpu();
}

static void t_config_cpus(void)
{
    int last = last_allowed_cpu(), first = first_allowed_cpu();
    CU_ASSERT_FATAL(last >= 0 && first >= 0);
    /* default: the last CPU of the binding */
    svc_init(1, 0, 0);
    coexec_service_info_t info = svc_info();
    CH_ASSERT_EQ(info.cpu, last);
    CH_ASSERT_EQ(info.shares_cpu, stream_on_cpu(info.cpu));
    intptr_t ret = -1;
    CH_ASSERT_OK(coexec_offload(cpu_fn, NULL, &ret));
    CH_ASSERT_EQ(ret, last);
    ch_finalize();

    /* COEXEC_SERVICE_CPUS names it */
    char v[16];
    snprintf(v, sizeof v, "%d", first);
    setenv("COEXEC_SERVICE_CPUS", v, 1);
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.num_xstreams = NSTREAMS;
    int rc = coexec_init(&cfg);
    unsetenv("COEXEC_SERVICE_CPUS");
    CH_ASSERT_RC_FATAL(rc, COEXEC_OK);
    info = svc_info();
    CH_ASSERT_EQ(info.cpu, first);
    CH_ASSERT_EQ(info.shares_cpu, stream_on_cpu(info.cpu));
    ret = -1;
    CH_ASSERT_OK(coexec_offload(cpu_fn, NULL, &ret));
    CH_ASSERT_EQ(ret, first);
    coexec_config_t got;
    CH_ASSERT_OK(coexec_get_config(&got));
    CU_ASSERT(strcmp(got.service_cpus, v) == 0);
    ch_finalize();
}

/* COEXEC_SERVICE_IO: good values, any case; malformed ones name it */
static void t_config_io_env(void)
{
    static const struct {
        const char *val;
        coexec_service_io_t want;
    } good[] = {{"auto", COEXEC_SERVICE_IO_AUTO},
                {"AUTO", COEXEC_SERVICE_IO_AUTO},
                {"uring", COEXEC_SERVICE_IO_URING},
                {"io_uring", COEXEC_SERVICE_IO_URING},
                {"threads", COEXEC_SERVICE_IO_THREADS},
                {"Threads", COEXEC_SERVICE_IO_THREADS}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        coexec_config_t cfg;
        CH_ASSERT_OK(coexec_config_init(&cfg));
        CH_ASSERT_EQ(cfg.service_io, COEXEC_SERVICE_IO_AUTO);
        /* the variable wins over the field */
        cfg.service_io = good[i].want == COEXEC_SERVICE_IO_THREADS
                             ? COEXEC_SERVICE_IO_URING
                             : COEXEC_SERVICE_IO_THREADS;
        cfg.quiet = 1;
        setenv("COEXEC_SERVICE_IO", good[i].val, 1);
        int rc = coexec_init(&cfg);
        unsetenv("COEXEC_SERVICE_IO");
        CH_ASSERT_RC_FATAL(rc, COEXEC_OK);
        coexec_config_t got;
        CH_ASSERT_OK(coexec_get_config(&got));
        CH_ASSERT_EQ(got.service_io, good[i].want);
        const char *path = svc_info().io_path;
        CU_ASSERT_PTR_NOT_NULL_FATAL(path);
        if (good[i].want == COEXEC_SERVICE_IO_THREADS)
            CU_ASSERT_STRING_EQUAL(path, "threads");
        ch_finalize();
    }
    static const char *bad[] = {"", "ring", "threads2", "1", " uring",
                                "uring ", "iouring", "auto,threads"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("COEXEC_SERVICE_IO", bad[i], 1);
        int rc = coexec_init(NULL);
        unsetenv("COEXEC_SERVICE_IO");
        if (rc == COEXEC_OK)
            ch_finalize();
        CH_ASSERT_RC(rc, COEXEC_EENV);
        CU_ASSERT_PTR_NOT_NULL(strstr(coexec_init_error(), "COEXEC_SERVICE_IO"));
        CH_ASSERT_EQ(coexec_initialized(), 0);
    }
}

static void t_config_io_bad_cfg(void)
{
    static const int bad[] = {3, -1, 100};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        coexec_config_t cfg;
        CH_ASSERT_OK(coexec_config_init(&cfg));
        cfg.service_io = (coexec_service_io_t)bad[i];
        CH_ASSERT_RC(coexec_init(&cfg), COEXEC_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(coexec_init_error(), "service_io"));
        CH_ASSERT_EQ(coexec_initialized(), 0);
    }
    /* a caller built before the field existed gets the default */
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.service_io = (coexec_service_io_t)77; /* beyond the old size */
    cfg.size = offsetof(coexec_config_t, service_io);
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    coexec_config_t got;
    CH_ASSERT_OK(coexec_get_config(&got));
    CH_ASSERT_EQ(got.service_io, COEXEC_SERVICE_IO_AUTO);
    ch_finalize();
}

/* ======================================================================= */

const ch_test_t service_config_tests[] = {
    {"defaults", t_config_defaults},
    {"env_malformed", t_config_env_malformed},
    {"env_values", t_config_env_values},
    {"bad_cfg", t_config_bad_cfg},
    {"cpus", t_config_cpus},
    {"io_env", t_config_io_env},
    {"io_bad_cfg", t_config_io_bad_cfg},
    {NULL, NULL}};
