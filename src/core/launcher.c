/*
 * src/core/launcher.c: this process's local rank and local size among the
 * processes of its job on this node, from the launcher's environment
 * (coexec/runtime.h lists the variables, COEXEC_AFFINITY what is done with
 * them). Read once per coexec_init, before placement.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/global.h"
#include "base/topology.h"
#include "core/config.h"

/* A whole non-negative decimal number that fits an int, or -1. */
static long parse_count(const char *s)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return *end || errno || v > 1 << 30 ? -1 : v;
}

/*
 * Slurm's SLURM_TASKS_PER_NODE ("2(x3),1": 2 tasks on each of the first 3
 * nodes, then 1): the count of node `node`, or -1 when s is malformed or
 * has no such node.
 */
int coexec__slurm_tasks_on_node(const char *s, int node)
{
    if (!s || node < 0)
        return -1;
    while (*s) {
        char *end;
        long tasks = strtol(s, &end, 10), reps = 1;
        if (end == s || tasks < 0)
            return -1;
        s = end;
        if (*s == '(') {
            if (s[1] != 'x')
                return -1;
            reps = strtol(s + 2, &end, 10);
            if (end == s + 2 || *end != ')' || reps < 1)
                return -1;
            s = end + 1;
        }
        if (node < reps)
            return (int)tasks;
        node -= (int)reps;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return -1;
}

struct launcher {
    const char *rank, *size, *source;
};

static const struct launcher launchers[] = {
    {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "Open MPI"},
    {"MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE", "MVAPICH"},
    {"MPI_LOCALRANKID", "MPI_LOCALNRANKS", "MPICH Hydra"},
    {"PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE", "PMIx"},
    {"PALS_LOCAL_RANKID", "PALS_LOCAL_SIZE", "Cray PALS"},
    {"PMI_LOCAL_RANK", "PMI_LOCAL_SIZE", "PMI"},
};

/* Slurm: SLURM_LOCALID, with SLURM_NTASKS_PER_NODE, else this node's
 * entry of SLURM_TASKS_PER_NODE. */
static bool slurm(struct coexec__local *out)
{
    long r = parse_count(getenv("SLURM_LOCALID"));
    long n = parse_count(getenv("SLURM_NTASKS_PER_NODE"));
    if (r < 0)
        return false;
    if (n < 0) {
        long node = parse_count(getenv("SLURM_NODEID"));
        n = coexec__slurm_tasks_on_node(getenv("SLURM_TASKS_PER_NODE"),
                                        node < 0 ? 0 : (int)node);
    }
    if (n < 1 || r >= n)
        return false;
    *out = (struct coexec__local){(int)r, (int)n, "Slurm"};
    return true;
}

int coexec__local_detect(struct coexec__local *out)
{
    *out = (struct coexec__local){0, 1, "none"};
    const char *cr = getenv("COEXEC_LOCAL_RANK"), *cs = getenv("COEXEC_LOCAL_SIZE");
    if (cr || cs) {
        long r = parse_count(cr), n = parse_count(cs);
        if (r < 0 || n < 1 || r >= n) {
            coexec__set_init_error(
                "coexec_init: COEXEC_LOCAL_RANK=\"%s\" COEXEC_LOCAL_SIZE=\"%s\" "
                "is not valid: expected both, with 0 <= rank < size",
                cr ? cr : "", cs ? cs : "");
            fprintf(stderr, "%s\n", coexec_init_error());
            return COEXEC_EENV;
        }
        *out = (struct coexec__local){(int)r, (int)n, "COEXEC_LOCAL_*"};
        return COEXEC_OK;
    }
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
        const char *vr = getenv(launchers[i].rank), *vs = getenv(launchers[i].size);
        if (!vr || !vs)
            continue;
        long r = parse_count(vr), n = parse_count(vs);
        if (r >= 0 && n >= 1 && r < n) {
            *out = (struct coexec__local){(int)r, (int)n, launchers[i].source};
            return COEXEC_OK;
        }
        coexec__warn("%s=\"%s\" %s=\"%s\" ignored: not a local rank and size",
                     launchers[i].rank, vr, launchers[i].size, vs);
    }
    slurm(out);
    return COEXEC_OK;
}
