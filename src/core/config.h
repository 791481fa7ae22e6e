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

int coexec__config_apply_env(coexec_config_t *cfg);
int coexec__config_validate(const coexec_config_t *cfg);
void coexec__set_init_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

#endif /* COEXEC_CORE_CONFIG_H */
