/* src/core/config.h: configuration helpers used by init. */
#ifndef COEXEC_CORE_CONFIG_H
#define COEXEC_CORE_CONFIG_H

#include "coexec.h"

#define COEXEC_MIN_STACK (16u * 1024)
#define COEXEC_MAX_STACK (1024u * 1024 * 1024)
/* The smallest stack a user may ask for or provide. */
#define COEXEC__USER_MIN_STACK (8u * 1024)
/* Guard regions below runtime-mapped stacks (cfg.guard_size). */
#define COEXEC__DEFAULT_GUARD ((size_t)4096)
#define COEXEC__MAX_GUARD ((size_t)64 * 1024 * 1024)

/* The most CPUs a CPU list may name (ranges expanded). */
#define COEXEC__MAX_CPULIST 1024

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
/* Parses a CPU list, "3", "2,3", "0-3,8": CPU numbers and ranges lo-hi
 * (lo <= hi) separated by commas, digits only. Stores the CPUs, ranges
 * expanded, in cpus (at most max) and their count in *n. Returns NULL, or
 * what is wrong with s. */
const char *coexec__cpulist_parse(const char *s, int *cpus, int max, int *n);
void coexec__set_init_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

#endif /* COEXEC_CORE_CONFIG_H */
