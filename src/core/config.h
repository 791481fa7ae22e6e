/* src/core/config.h: configuration helpers used by init. */
#ifndef COEXEC_CORE_CONFIG_H
#define COEXEC_CORE_CONFIG_H

#include <stdio.h>

#include "base/cpulist.h"
#include "base/global.h"
#include "coexec.h"

/* Applies the COEXEC_* variables to cfg, each checked against the bounds
 * of its field; *from_env marks the fields they set (for validate).
 * Returns COEXEC_OK, or COEXEC_EENV with the variable named in
 * coexec_init_error() (and on stderr). */
int coexec__config_apply_env(coexec_config_t *cfg, uint32_t *from_env);
/* Checks the fields the environment did not set, with the same bounds,
 * and the fields' relations. Returns COEXEC_OK; COEXEC_EINVAL naming the
 * field; COEXEC_EENV naming the variable when one the environment set
 * breaks a relation; COEXEC_ENOMEM. */
int coexec__config_validate(const coexec_config_t *cfg, uint32_t from_env);
void coexec__set_init_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* The counters' table (core/stats.c): coexec_stats_print, at finalize. */
int coexec__stats_print(FILE *f);
/* The monitor thread (core/info.c) for COEXEC_DUMP_SIGNAL and
 * COEXEC_HANG_DUMP: started by init when either is set, stopped by
 * finalize. */
int coexec__monitor_start(void);
void coexec__monitor_stop(void);
void coexec__monitor_atfork_child(void);
/* The trace (core/trace.c): set up by init (COEXEC_TRACE starts it),
 * written and ended by finalize once no stream runs. */
int coexec__trace_init(void);
void coexec__trace_end(void);

/* The launcher's local rank and size (src/core/launcher.c): COEXEC_OK, or
 * COEXEC_EENV for a malformed COEXEC_LOCAL_RANK/COEXEC_LOCAL_SIZE pair
 * (the init error says so). */
struct coexec__local;
int coexec__local_detect(struct coexec__local *out);
/* Slurm's SLURM_TASKS_PER_NODE ("2(x3),1"): node `node`'s tasks, or -1. */
int coexec__slurm_tasks_on_node(const char *s, int node);

#endif /* COEXEC_CORE_CONFIG_H */
