/*
 * coexec/defs.h: visibility, linkage and attribute macros shared by every
 * public header. Nothing here depends on the rest of the API.
 */
#ifndef COEXEC_DEFS_H
#define COEXEC_DEFS_H

#if defined(__GNUC__) || defined(__clang__)
#define COEXEC_API __attribute__((visibility("default")))
#define COEXEC_NODISCARD __attribute__((warn_unused_result))
#else
#define COEXEC_API
#define COEXEC_NODISCARD
#endif

#ifdef __cplusplus
#define COEXEC_BEGIN_DECLS extern "C" {
#define COEXEC_END_DECLS }
#else
#define COEXEC_BEGIN_DECLS
#define COEXEC_END_DECLS
#endif

#endif /* COEXEC_DEFS_H */
