/*
 * coexec/version.h: compile-time and run-time version queries.
 * The numbers here are the single source of the release number: CMake reads
 * them to set the project version.
 */
#ifndef COEXEC_VERSION_H
#define COEXEC_VERSION_H

#include "defs.h"

/* Major version: changes when the API breaks (from 1.0 on; see
 * docs/VERSIONING.md). */
#define COEXEC_VERSION_MAJOR 0
/* Minor version: changes when calls are added (and, before 1.0, when the
 * API breaks). */
#define COEXEC_VERSION_MINOR 1
/* Patch version: changes for fixes that leave every interface as it was. */
#define COEXEC_VERSION_PATCH 0

/* 0xMMmmpp: compare with COEXEC_VERSION_AT_LEAST rather than by hand. */
#define COEXEC_VERSION_HEX                                                     \
    ((COEXEC_VERSION_MAJOR << 16) | (COEXEC_VERSION_MINOR << 8) |              \
     COEXEC_VERSION_PATCH)

/* True when the headers are version maj.min or newer. */
#define COEXEC_VERSION_AT_LEAST(maj, min)                                      \
    (COEXEC_VERSION_HEX >= (((maj) << 16) | ((min) << 8)))

COEXEC_BEGIN_DECLS

/*
 * The version of the library actually linked, as COEXEC_VERSION_HEX.
 * Context: any thread, before or after coexec_init. Switches: never.
 */
COEXEC_API unsigned coexec_version(void);

/*
 * The same as a "major.minor.patch" string with static storage.
 * Context: any thread, before or after coexec_init. Switches: never.
 */
COEXEC_API const char *coexec_version_string(void);

COEXEC_END_DECLS

#endif /* COEXEC_VERSION_H */
