/*
 * src/core/error.c: coexec_strerror and coexec_err_name, generated from the
 * one table in coexec/error.h.
 */

#include "coexec.h"

COEXEC_API const char *coexec_strerror(int code)
{
    switch (code) {
#define COEXEC_ERROR_TEXT_(name, value, text)                                  \
    case (value):                                                              \
        return text;
        COEXEC_ERROR_TABLE(COEXEC_ERROR_TEXT_)
#undef COEXEC_ERROR_TEXT_
    default:
        return "unknown error";
    }
}

COEXEC_API const char *coexec_err_name(int code)
{
    switch (code) {
#define COEXEC_ERROR_NAME_(name, value, text)                                  \
    case (value):                                                              \
        return #name;
        COEXEC_ERROR_TABLE(COEXEC_ERROR_NAME_)
#undef COEXEC_ERROR_NAME_
    default:
        return "UNKNOWN";
    }
}

COEXEC_API unsigned coexec_version(void)
{
    return COEXEC_VERSION_HEX;
}

#define STR_(x) #x
#define STR(x) STR_(x)
COEXEC_API const char *coexec_version_string(void)
{
    return STR(COEXEC_VERSION_MAJOR) "." STR(COEXEC_VERSION_MINOR) "." STR(
        COEXEC_VERSION_PATCH);
}
