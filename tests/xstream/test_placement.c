/*
 * tests/xstream/test_placement.c: where streams are pinned when several
 * ranks of a job share a node (COEXEC_AFFINITY, coexec/runtime.h).
 *
 *   partition  the local rank and size of every launcher the header names
 *              (set in the environment as the launcher would): rank r of
 *              2 takes core r, and its streams' real masks (read inside
 *              each stream) hold that core only; ranks of 3 on 2 cores
 *   modes      binding ignores the ranks, rank partitions even a binding
 *              of its share, none pins nothing; old values 0 and 1
 *   errors     a malformed COEXEC_LOCAL_RANK / COEXEC_LOCAL_SIZE pair and
 *              COEXEC_AFFINITY value fail init with COEXEC_EENV; a field
 *              out of range with COEXEC_EINVAL; malformed launcher
 *              variables are ignored
 *   slurm      SLURM_TASKS_PER_NODE's syntax ("2(x3),1"), node by node
 *
 * The checks that need two cores are skipped on a machine with one.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* src/core/launcher.c (internal; the test links libcoexec.a). */
int coexec__slurm_tasks_on_node(const char *s, int node);

#define NS 2

static int cpus_online(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    return CPU_COUNT(&set);
}

/* Sets the pairs of name=value (NULL-terminated), or unsets them. */
static void env_set(const char *const *kv, bool set)
{
    for (; kv[0]; kv += 2) {
        if (set)
            setenv(kv[0], kv[1], 1);
        else
            unsetenv(kv[0]);
    }
}

/* Inits NS streams with the environment kv and the mode, and stores each
 * stream's CPU (coexec_xstream_get_cpu) and real mask. */
static void place(const char *const *kv, int mode, int cpu[NS], uint64_t mask[NS])
{
    env_set(kv, true);
    coexec_config_t cfg;
    CU_ASSERT_EQUAL_FATAL(coexec_config_init(&cfg), COEXEC_OK);
    cfg.num_xstreams = NS;
    cfg.affinity = mode;
    cfg.quiet = 1;
    int rc = coexec_init(&cfg);
    env_set(kv, false);
    CU_ASSERT_EQUAL_FATAL(rc, COEXEC_OK);
    for (int i = 0; i < NS; i++) {
        CU_ASSERT_EQUAL(coexec_xstream_get_cpu(ch_xstream(i), &cpu[i]), COEXEC_OK);
        mask[i] = ch_stream_cpu_mask(i);
    }
    ch_finalize();
}

/* Rank r of 2 on a 2-core machine: every stream on CPU r alone. */
static void expect_core(const char *const *kv, int mode, int core)
{
    int cpu[NS];
    uint64_t mask[NS];
    place(kv, mode, cpu, mask);
    for (int i = 0; i < NS; i++) {
        CU_ASSERT_EQUAL(cpu[i], core);
        CU_ASSERT_EQUAL(mask[i], 1ull << core);
    }
}

static void test_partition(void)
{
    if (cpus_online() != 2) {
        CU_PASS("needs a process allowed on exactly 2 CPUs: skipped");
        return;
    }
    static const char *const sets[][9] = {
        {"COEXEC_LOCAL_RANK", "@", "COEXEC_LOCAL_SIZE", "2", NULL},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "@", "OMPI_COMM_WORLD_LOCAL_SIZE", "2", NULL},
        {"MV2_COMM_WORLD_LOCAL_RANK", "@", "MV2_COMM_WORLD_LOCAL_SIZE", "2", NULL},
        {"MPI_LOCALRANKID", "@", "MPI_LOCALNRANKS", "2", NULL},
        {"PMIX_LOCAL_RANK", "@", "PMIX_LOCAL_SIZE", "2", NULL},
        {"PALS_LOCAL_RANKID", "@", "PALS_LOCAL_SIZE", "2", NULL},
        {"PMI_LOCAL_RANK", "@", "PMI_LOCAL_SIZE", "2", NULL},
        {"SLURM_LOCALID", "@", "SLURM_NTASKS_PER_NODE", "2", NULL},
        {"SLURM_LOCALID", "@", "SLURM_TASKS_PER_NODE", "3,2(x2)", "SLURM_NODEID",
         "2", NULL},
    };
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
        for (int r = 0; r < 2; r++) {
            const char *kv[9];
            memcpy(kv, sets[s], sizeof kv);
            kv[1] = r ? "1" : "0";
            expect_core(kv, COEXEC_AFFINITY_AUTO, r);
        }
    }
    /* Three ranks on two cores: ranks share (0 and 1 on core 0). */
    const char *three[] = {"COEXEC_LOCAL_RANK", "2", "COEXEC_LOCAL_SIZE", "3", NULL};
    expect_core(three, COEXEC_AFFINITY_AUTO, 1);
    three[1] = "1";
    expect_core(three, COEXEC_AFFINITY_AUTO, 0);
    /* COEXEC_LOCAL_* comes first. */
    const char *both[] = {"COEXEC_LOCAL_RANK", "1", "COEXEC_LOCAL_SIZE", "2",
                          "OMPI_COMM_WORLD_LOCAL_RANK", "0",
                          "OMPI_COMM_WORLD_LOCAL_SIZE", "2", NULL};
    expect_core(both, COEXEC_AFFINITY_AUTO, 1);
}

static void test_modes(void)
{
    if (cpus_online() != 2) {
        CU_PASS("needs a process allowed on exactly 2 CPUs: skipped");
        return;
    }
    const char *r1[] = {"COEXEC_LOCAL_RANK", "1", "COEXEC_LOCAL_SIZE", "2", NULL};
    int cpu[NS];
    uint64_t mask[NS];
    /* binding: the ranks are not looked at; streams 0 and 1 on the two. */
    place(r1, COEXEC_AFFINITY_BINDING, cpu, mask);
    CU_ASSERT(cpu[0] >= 0 && cpu[1] >= 0 && cpu[0] != cpu[1]);
    CU_ASSERT_EQUAL(mask[0] & mask[1], 0);
    /* rank: partitions. */
    expect_core(r1, COEXEC_AFFINITY_RANK, 1);
    /* none: nothing pinned. */
    place(r1, COEXEC_AFFINITY_NONE, cpu, mask);
    CU_ASSERT_EQUAL(cpu[0], -1);
    CU_ASSERT_EQUAL(cpu[1], -1);
    /* Alone on the node: auto is binding. */
    const char *alone[] = {"COEXEC_LOCAL_RANK", "0", "COEXEC_LOCAL_SIZE", "1", NULL};
    place(alone, COEXEC_AFFINITY_AUTO, cpu, mask);
    CU_ASSERT(cpu[0] != cpu[1]);
    /* The variable's names, and 0 / 1 as before. */
    static const struct {
        const char *val;
        int mode;
    } names[] = {{"auto", COEXEC_AFFINITY_AUTO},   {"1", COEXEC_AFFINITY_AUTO},
                 {"yes", COEXEC_AFFINITY_AUTO},    {"0", COEXEC_AFFINITY_NONE},
                 {"off", COEXEC_AFFINITY_NONE},    {"none", COEXEC_AFFINITY_NONE},
                 {"binding", COEXEC_AFFINITY_BINDING},
                 {"rank", COEXEC_AFFINITY_RANK},   {"RANK", COEXEC_AFFINITY_RANK}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        setenv("COEXEC_AFFINITY", names[i].val, 1);
        int rc = coexec_init(NULL);
        unsetenv("COEXEC_AFFINITY");
        CU_ASSERT_EQUAL_FATAL(rc, COEXEC_OK);
        coexec_config_t got;
        CU_ASSERT_EQUAL(coexec_get_config(&got), COEXEC_OK);
        CU_ASSERT_EQUAL(got.affinity, names[i].mode);
        ch_finalize();
    }
}

static void test_errors(void)
{
    static const char *const bad[][4] = {
        {"2", "2"}, {"x", "2"}, {"0", "0"}, {"-1", "2"}, {"1", NULL}, {NULL, "2"},
        {"1 ", "2"}, {"", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (bad[i][0])
            setenv("COEXEC_LOCAL_RANK", bad[i][0], 1);
        if (bad[i][1])
            setenv("COEXEC_LOCAL_SIZE", bad[i][1], 1);
        char err[512];
        bool refused = ch_init_env_refused("COEXEC_QUIET", "1", err, sizeof err);
        unsetenv("COEXEC_LOCAL_RANK");
        unsetenv("COEXEC_LOCAL_SIZE");
        CU_ASSERT(refused);
        CU_ASSERT_PTR_NOT_NULL(strstr(coexec_init_error(), "COEXEC_LOCAL_RANK"));
    }
    char err[512];
    CU_ASSERT(ch_init_env_refused("COEXEC_AFFINITY", "sometimes", err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "auto, binding, rank or none"));
    coexec_config_t cfg;
    CU_ASSERT_EQUAL(coexec_config_init(&cfg), COEXEC_OK);
    cfg.affinity = 4;
    CU_ASSERT_EQUAL(coexec_init(&cfg), COEXEC_EINVAL);
    cfg.affinity = -1;
    CU_ASSERT_EQUAL(coexec_init(&cfg), COEXEC_EINVAL);
    /* A launcher's malformed pair is ignored: init works, alone. */
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    setenv("COEXEC_QUIET", "1", 1);
    int rc = coexec_init(NULL);
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    unsetenv("COEXEC_QUIET");
    CU_ASSERT_EQUAL(rc, COEXEC_OK);
    if (rc == COEXEC_OK)
        ch_finalize();
}

static void test_slurm(void)
{
    CU_ASSERT_EQUAL(coexec__slurm_tasks_on_node("2(x3),1", 0), 2);
    CU_ASSERT_EQUAL(coexec__slurm_tasks_on_node("2(x3),1", 2), 2);
    CU_ASSERT_EQUAL(coexec__slurm_tasks_on_node("2(x3),1", 3), 1);
    CU_ASSERT_EQUAL(coexec__slurm_tasks_on_node("2(x3),1", 4), -1);
    CU_ASSERT_EQUAL(coexec__slurm_tasks_on_node("4", 0), 4);
    CU_ASSERT_EQUAL(coexec__slurm_tasks_on_node("1,3,5", 1), 3);
    CU_ASSERT_EQUAL(coexec__slurm_tasks_on_node("3(x2),4(x1)", 2), 4);
    CU_ASSERT_EQUAL(coexec__slurm_tasks_on_node("2(3)", 0), -1);
    CU_ASSERT_EQUAL(coexec__slurm_tasks_on_node("2(x0)", 0), -1);
    CU_ASSERT_EQUAL(coexec__slurm_tasks_on_node("a", 0), -1);
    CU_ASSERT_EQUAL(coexec__slurm_tasks_on_node("2;1", 1), -1);
    CU_ASSERT_EQUAL(coexec__slurm_tasks_on_node("", 0), -1);
    CU_ASSERT_EQUAL(coexec__slurm_tasks_on_node(NULL, 0), -1);
    CU_ASSERT_EQUAL(coexec__slurm_tasks_on_node("2", -1), -1);
}

static const ch_test_t partition_tests[] = {{"partition", test_partition},
                                            {NULL, NULL}};
static const ch_test_t modes_tests[] = {{"modes", test_modes}, {NULL, NULL}};
static const ch_test_t errors_tests[] = {{"errors", test_errors}, {NULL, NULL}};
static const ch_test_t slurm_tests[] = {{"slurm", test_slurm}, {NULL, NULL}};

int main(int argc, char **argv)
{
    static const ch_suite_t suites[] = {{"partition", partition_tests},
                                        {"modes", modes_tests},
                                        {"errors", errors_tests},
                                        {"slurm", slurm_tests},
                                        {NULL, NULL}};
    return ch_main(argc, argv, suites);
}
