/*
 * consumer.c: a program built against an installed libcoexec, the way a
 * user would build it (pkg-config or find_package). Exits 0 on success.
 */
#include <coexec.h>
#include <stdio.h>

static void body(void *arg)
{
    *(int *)arg = 42;
}

#define CHECK(call)                                                            \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ != COEXEC_OK) {                                                \
            fprintf(stderr, "consumer: %s failed: %s\n", #call,                \
                    coexec_strerror(rc_));                                     \
            return 1;                                                          \
        }                                                                      \
    } while (0)

int main(void)
{
    if (coexec_version() != COEXEC_VERSION_HEX) {
        fprintf(stderr, "consumer: headers 0x%06x, library 0x%06x (%s)\n",
                (unsigned)COEXEC_VERSION_HEX, coexec_version(),
                coexec_version_string());
        return 1;
    }
    CHECK(coexec_init(NULL));

    coexec_xstream_t self;
    coexec_thread_t t;
    int value = 0;
    CHECK(coexec_xstream_self(&self));
    CHECK(coexec_thread_create_on(self, body, &value, NULL, &t));
    CHECK(coexec_thread_join(t));
    CHECK(coexec_thread_free(&t));
    if (value != 42) {
        fprintf(stderr, "consumer: the ULT did not run\n");
        return 1;
    }

    CHECK(coexec_finalize());
    printf("consumer: ok, libcoexec %s\n", coexec_version_string());
    return 0;
}
