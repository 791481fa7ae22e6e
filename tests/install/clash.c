/*
 * clash.c: a program that defines functions with common names that
 * libcoexec once exported from its static archive without its prefix
 * (wait_block, wait_release, ...). Linked against libcoexec.a it must
 * link, and both its functions and the runtime's waits must work: every
 * global symbol of the library starts with coexec_. Exits 0 on success.
 */
#include <coexec.h>
#include <stdint.h>
#include <stdio.h>

/* The program's own functions, named like the library's former globals.
 * External linkage on purpose: a clash is a link error. */
int wait_init(int x);
int wait_block(int x);
int wait_release(int x);
int wait_release_all(int x);
int wait_result_code(int x);
int wait_link_tasklet(int x);

int wait_init(int x) { return x + 1; }
int wait_block(int x) { return x + 2; }
int wait_release(int x) { return x + 3; }
int wait_release_all(int x) { return x + 4; }
int wait_result_code(int x) { return x + 5; }
int wait_link_tasklet(int x) { return x + 6; }

static coexec_eventual_t ev;

/* Blocks on the eventual, so that the runtime's wait lists are linked in
 * and used. */
static void waiter(void *arg)
{
    void *v = NULL;
    int rc = coexec_eventual_wait(&ev, &v);
    *(int *)arg = rc == COEXEC_OK && v ? *(int *)v : -1;
}

#define CHECK(call)                                                            \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ != COEXEC_OK) {                                                \
            fprintf(stderr, "clash: %s failed: %s\n", #call,                   \
                    coexec_strerror(rc_));                                     \
            return 1;                                                          \
        }                                                                      \
    } while (0)

int main(void)
{
    int sum = wait_init(0) + wait_block(0) + wait_release(0) +
              wait_release_all(0) + wait_result_code(0) + wait_link_tasklet(0);
    if (sum != 21) {
        fprintf(stderr, "clash: the program's own functions gave %d\n", sum);
        return 1;
    }
    CHECK(coexec_init(NULL));
    CHECK(coexec_eventual_init(&ev, sizeof(int)));
    coexec_xstream_t self;
    coexec_thread_t t;
    int got = 0, value = 42;
    CHECK(coexec_xstream_self(&self));
    CHECK(coexec_thread_create_on(self, waiter, &got, NULL, &t));
    CHECK(coexec_yield());
    CHECK(coexec_eventual_set(&ev, &value, sizeof value));
    CHECK(coexec_thread_join(t));
    CHECK(coexec_thread_free(&t));
    CHECK(coexec_eventual_destroy(&ev));
    CHECK(coexec_finalize());
    if (got != 42) {
        fprintf(stderr, "clash: the waiter got %d\n", got);
        return 1;
    }
    printf("clash: ok, libcoexec %s\n", coexec_version_string());
    return 0;
}
