/*
 * src/base/topology.c: where streams run. The only includer of hwloc.h.
 *
 * The candidate CPUs are the process's own binding (intersected with what
 * the topology allows), one processing unit per core first, then the other
 * hyperthreads: so two MPI ranks bound to different cores keep their
 * streams apart, and stream k lands on the k-th core. Where the launcher
 * did not bind the ranks of a node apart (COEXEC_AFFINITY auto or rank,
 * with the local rank and size init found), a rank takes its block of the
 * binding's cores instead. The topology is
 * loaded once per process (it costs ~10 ms) and kept across init cycles.
 */
#include <hwloc.h>
#include <hwloc/glibc-sched.h>
#include <stdlib.h>
#include <string.h>

#include "base/global.h"
#include "base/self.h"
#include "base/topology.h"

static hwloc_topology_t topo;
static int *cpus;   /* OS indices of candidate PUs, in placement order */
static int ncpus;
static hwloc_bitmap_t binding; /* the process's CPUs (valid_cpu) */
static char desc[256];
static pthread_mutex_t topo_lock = PTHREAD_MUTEX_INITIALIZER;
static int warned_wrap;

static int load_topology(void)
{
    if (topo)
        return 0;
    if (hwloc_topology_init(&topo) != 0)
        return -1;
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        topo = NULL;
        return -1;
    }
    return 0;
}

/* The CPUs the process may run on: its binding, within what the topology
 * allows (all of those when the binding cannot be read). The topology is
 * loaded and topo_lock held. */
static void process_cpuset(hwloc_bitmap_t set)
{
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) != 0)
        hwloc_bitmap_copy(set, hwloc_topology_get_allowed_cpuset(topo));
    hwloc_bitmap_and(set, set, hwloc_topology_get_allowed_cpuset(topo));
    if (hwloc_bitmap_iszero(set))
        hwloc_bitmap_copy(set, hwloc_topology_get_allowed_cpuset(topo));
}

/* The cores of `set` in hwloc's logical order (which keeps the cores of a
 * cache or a package together), into core[] (at most max); their number. */
static int binding_cores(hwloc_const_bitmap_t set, hwloc_obj_t *core, int max)
{
    int n = 0, all = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    for (int c = 0; c < all && n < max; c++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, c);
        if (o && hwloc_bitmap_intersects(o->cpuset, set))
            core[n++] = o;
    }
    return n;
}

/* Whether this rank takes a share of its binding (the placement rule of
 * coexec/runtime.h): `rank` always, `auto` when the binding holds more
 * cores than a local rank's share of the machine's. */
static bool wants_partition(int mode, const struct coexec__local *loc,
                            int ncores)
{
    if (loc->size < 2 || (mode != COEXEC_AFFINITY_AUTO &&
                          mode != COEXEC_AFFINITY_RANK))
        return false;
    if (mode == COEXEC_AFFINITY_RANK)
        return true;
    int machine = hwloc_get_nbobjs_inside_cpuset_by_type(
        topo, hwloc_topology_get_allowed_cpuset(topo), HWLOC_OBJ_CORE);
    return (long)ncores * loc->size > machine;
}

/* Keeps in `set` the cores of local rank loc->rank's block: the binding's
 * cores split into loc->size contiguous blocks, as even as may be (ranks
 * share a core when there are fewer cores than ranks). Writes what it
 * chose into what (len bytes). */
static void partition(hwloc_bitmap_t set, const struct coexec__local *loc,
                      hwloc_obj_t *core, int n, char *what, size_t len)
{
    int r = loc->rank, k = loc->size, first, count;
    if (n >= k) {
        first = r * (n / k) + (r < n % k ? r : n % k);
        count = n / k + (r < n % k);
    } else {
        first = (int)((long)r * n / k);
        count = 1;
        coexec__warn("%d local ranks share %d core(s): ranks share cores", k, n);
    }
    hwloc_bitmap_t keep = hwloc_bitmap_alloc();
    if (!keep)
        return;
    for (int i = first; i < first + count; i++)
        hwloc_bitmap_or(keep, keep, core[i]->cpuset);
    hwloc_bitmap_and(set, set, keep);
    hwloc_bitmap_free(keep);
    snprintf(what, len, "local rank %d of %d (%s), core(s) %d-%d of its %d",
             r, k, loc->source, first, first + count - 1, n);
}

/* cpus[]: the first PU of every core of set, then the other PUs. */
static void order_cpus(hwloc_const_bitmap_t set)
{
    hwloc_bitmap_t used = hwloc_bitmap_alloc();
    int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    for (int c = 0; c < ncores && used; c++) {
        hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, c);
        int pu = -1;
        hwloc_bitmap_foreach_begin(pu, core->cpuset)
        {
            if (hwloc_bitmap_isset(set, (unsigned)pu)) {
                cpus[ncpus++] = pu;
                hwloc_bitmap_set(used, (unsigned)pu);
                break;
            }
        }
        hwloc_bitmap_foreach_end();
    }
    int pu;
    hwloc_bitmap_foreach_begin(pu, set)
    {
        if (!used || !hwloc_bitmap_isset(used, (unsigned)pu))
            cpus[ncpus++] = pu;
    }
    hwloc_bitmap_foreach_end();
    hwloc_bitmap_free(used);
}

int coexec__affinity_init(const struct coexec__local *loc)
{
    int mode = coexec__g.cfg.affinity;
    pthread_mutex_lock(&topo_lock);
    warned_wrap = 0;
    free(cpus);
    cpus = NULL;
    ncpus = 0;
    hwloc_bitmap_free(binding);
    binding = NULL;
    if (load_topology() != 0) {
        pthread_mutex_unlock(&topo_lock);
        snprintf(desc, sizeof desc, "no topology: streams are not pinned");
        return COEXEC_OK;
    }
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    binding = hwloc_bitmap_alloc();
    int ncore = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    hwloc_obj_t *core = malloc(sizeof *core * (size_t)(ncore > 0 ? ncore : 1));
    if (!set || !binding || !core) {
        hwloc_bitmap_free(set);
        free(core);
        pthread_mutex_unlock(&topo_lock);
        return COEXEC_ENOMEM;
    }
    process_cpuset(set);
    hwloc_bitmap_copy(binding, set);
    char what[96] = "", list[96];
    int n = binding_cores(set, core, ncore);
    bool part = n > 0 && wants_partition(mode, loc, n);
    if (part)
        partition(set, loc, core, n, what, sizeof what);
    else if (loc->size > 1)
        snprintf(what, sizeof what, "local rank %d of %d (%s), its binding "
                 "honoured", loc->rank, loc->size, loc->source);
    free(core);
    int w = hwloc_bitmap_weight(set);
    cpus = malloc(sizeof(int) * (size_t)(w > 0 ? w : 1));
    if (!cpus) {
        hwloc_bitmap_free(set);
        pthread_mutex_unlock(&topo_lock);
        return COEXEC_ENOMEM;
    }
    order_cpus(set);
    hwloc_bitmap_list_snprintf(list, sizeof list, set);
    snprintf(desc, sizeof desc, "%s%s%s%s%d cpu(s) {%s}",
             mode == COEXEC_AFFINITY_NONE ? "none (not pinned): " : "",
             part ? "rank-partition: " : "binding: ", what, what[0] ? "; " : "",
             ncpus, list);
    hwloc_bitmap_free(set);
    pthread_mutex_unlock(&topo_lock);
    return COEXEC_OK;
}

/* fork (core/process.c): the child keeps the topology, so it must be
 * whole; the lock is released in the parent and in the child. */
void coexec__affinity_atfork_prepare(void)
{
    pthread_mutex_lock(&topo_lock);
}

void coexec__affinity_atfork_release(void)
{
    pthread_mutex_unlock(&topo_lock);
}

int coexec__affinity_ncpus(void)
{
    return ncpus;
}

const char *coexec__affinity_describe(void)
{
    return desc;
}

int coexec__affinity_cpu_for_rank(int rank)
{
    if (!coexec__g.cfg.affinity || ncpus == 0)
        return -1;
    if (rank >= ncpus && !warned_wrap) {
        warned_wrap = 1;
        coexec__warn("more execution streams than the %d cpu(s) available: "
                     "placement wraps around", ncpus);
    }
    return cpus[rank % ncpus];
}

int coexec__affinity_last_cpu(void)
{
    return ncpus ? cpus[ncpus - 1] : -1;
}

/* The deepest object (of the kinds a distance tells apart) holding both
 * CPUs. Called once per pair by each stream (it caches the answers). */
int coexec__affinity_distance(int cpu_a, int cpu_b)
{
    if (cpu_a < 0 || cpu_b < 0)
        return DIST_FAR;
    pthread_mutex_lock(&topo_lock);
    int d = DIST_FAR;
    if (topo) {
        hwloc_obj_t a = hwloc_get_pu_obj_by_os_index(topo, (unsigned)cpu_a);
        hwloc_obj_t b = hwloc_get_pu_obj_by_os_index(topo, (unsigned)cpu_b);
        hwloc_obj_t c = a && b ? hwloc_get_common_ancestor_obj(topo, a, b)
                               : NULL;
        for (; c && d == DIST_FAR; c = c->parent) {
            if (c->type == HWLOC_OBJ_CORE || c->type == HWLOC_OBJ_PU)
                d = DIST_CORE;
            else if (hwloc_obj_type_is_cache(c->type))
                d = DIST_CACHE;
            else if (c->type == HWLOC_OBJ_NUMANODE ||
                     (c->memory_arity > 0 && c->type != HWLOC_OBJ_MACHINE))
                d = DIST_NUMA;
            else if (c->type == HWLOC_OBJ_PACKAGE)
                d = DIST_PKG;
            else if (c->type == HWLOC_OBJ_MACHINE)
                break;
        }
    }
    pthread_mutex_unlock(&topo_lock);
    return d;
}

int coexec__affinity_valid_cpu(int cpu)
{
    /* Any CPU of the process's binding, also outside this rank's share. */
    if (binding)
        return cpu >= 0 && hwloc_bitmap_isset(binding, (unsigned)cpu);
    for (int i = 0; i < ncpus; i++)
        if (cpus[i] == cpu)
            return 1;
    return 0;
}

/* 1 when a stream may be re-pinned to cpu (coexec_xstream_set_cpus): a
 * CPU of the process's binding at init, whatever the threads' bindings
 * are now; without a topology the kernel decides (1). */
int coexec__affinity_may_use(int cpu)
{
    pthread_mutex_lock(&topo_lock);
    int ok = binding ? cpu >= 0 && hwloc_bitmap_isset(binding, (unsigned)cpu)
                     : 1;
    pthread_mutex_unlock(&topo_lock);
    return ok;
}

/* 1 when the process may run on each of the n cpus (the set placement
 * picks from, as coexec__affinity_valid_cpu), else 0 with the first other
 * in *bad and the CPUs it may run on in avail (a list such as "0-3,8").
 * Without a topology nothing is pinned and every CPU is accepted. Callable
 * before coexec__affinity_init (it loads the topology). COEXEC_ENOMEM. */
int coexec__affinity_cpus_allowed(const int *cpus, int n, int *bad,
                                  char *avail, size_t len)
{
    pthread_mutex_lock(&topo_lock);
    if (load_topology() != 0) {
        pthread_mutex_unlock(&topo_lock);
        return 1;
    }
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set) {
        pthread_mutex_unlock(&topo_lock);
        return COEXEC_ENOMEM;
    }
    process_cpuset(set);
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        if (cpus[i] < 0 || !hwloc_bitmap_isset(set, (unsigned)cpus[i])) {
            *bad = cpus[i];
            ok = 0;
        }
    }
    if (!ok && avail && len)
        hwloc_bitmap_list_snprintf(avail, len, set);
    hwloc_bitmap_free(set);
    pthread_mutex_unlock(&topo_lock);
    return ok;
}

/* The binding the init thread had before it became the primary stream. */
static hwloc_bitmap_t primary_saved;

int coexec__affinity_bind_primary(int cpu)
{
    if (cpu < 0 || !topo)
        return -1;
    hwloc_bitmap_t old = hwloc_bitmap_alloc();
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int rc = -1;
    /* Without the old binding it could not be given back: do not pin. */
    if (old && set &&
        hwloc_get_cpubind(topo, old, HWLOC_CPUBIND_THREAD) == 0) {
        hwloc_bitmap_only(set, (unsigned)cpu);
        rc = hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD);
    }
    hwloc_bitmap_free(set);
    if (rc == 0) {
        hwloc_bitmap_free(primary_saved);
        primary_saved = old;
        return 0;
    }
    hwloc_bitmap_free(old);
    coexec__warn("could not pin the primary stream to cpu %d; it runs "
                 "unpinned", cpu);
    return -1;
}

bool coexec__affinity_primary_saved(cpu_set_t *out)
{
    struct coexec_xstream_rec *xs = xs_self_entry();
    if (!primary_saved || !topo || !xs || xs != coexec__g.primary)
        return false;
    return hwloc_cpuset_to_glibc_sched_affinity(topo, primary_saved, out,
                                                sizeof *out) == 0;
}

void coexec__affinity_unbind_primary(void)
{
    if (!primary_saved)
        return;
    if (topo)
        IGNORE_RESULT(hwloc_set_cpubind(topo, primary_saved,
                                        HWLOC_CPUBIND_THREAD));
    hwloc_bitmap_free(primary_saved);
    primary_saved = NULL;
}

int coexec__affinity_bind_self(int cpu)
{
    if (cpu < 0 || !topo)
        return 0;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set)
        return COEXEC_ENOMEM;
    hwloc_bitmap_only(set, (unsigned)cpu);
    int rc = hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD);
    hwloc_bitmap_free(set);
    if (rc != 0)
        coexec__warn("could not pin a stream to cpu %d; it runs unpinned", cpu);
    return 0;
}
