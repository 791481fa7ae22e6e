#!/usr/bin/env python3
"""Writes include/coexec/fj_tasks.h: the COEXEC_FJ_TASK_n and
COEXEC_FJ_VOID_TASK_n macros (n = 0..MAX_ARGS) of the fork-join tier.

Run from the project's root after changing this script:
    python3 scripts/gen_fj_tasks.py > include/coexec/fj_tasks.h
The ctest entry fj.generated checks that the committed file is what this
script prints.
"""
import sys

MAX_ARGS = 6


def task_macro(n, void):
    name = ("COEXEC_FJ_VOID_TASK_%d" % n) if void else ("COEXEC_FJ_TASK_%d" % n)
    params = ([] if void else ["RTYPE"]) + ["NAME"]
    for i in range(1, n + 1):
        params += ["T%d" % i, "A%d" % i]
    decl = ", ".join(["coexec_fj_t *coexec_fj_"] +
                     ["T%d A%d" % (i, i) for i in range(1, n + 1)])
    fields = " ".join("T%d A%d;" % (i, i) for i in range(1, n + 1))
    if not fields:
        fields = "char unused_;"
    names = ", ".join("A%d" % i for i in range(1, n + 1))
    from_d = ", ".join(["fj_"] + ["d_->a.A%d" % i for i in range(1, n + 1)])
    init = "{%s}" % names if n else "{0}"
    rt = "void" if void else "RTYPE"
    res = "" if void else " RTYPE r;"
    call_body = ("NAME##_fj_body_(%s)" % from_d)
    lines = []
    lines.append("#define %s(%s)" % (name, ", ".join(params)))
    lines.append("typedef struct { %s } NAME##_fj_args_;" % fields)
    lines.append("typedef union { NAME##_fj_args_ a;%s } NAME##_fj_data_;" % res)
    lines.append("typedef struct { NAME##_fj_args_ a;%s } NAME##_fj_root_;" % res)
    lines.append("_Static_assert(sizeof(NAME##_fj_data_) <= COEXEC_FJ_DATA_SIZE,")
    lines.append("               \"the arguments (or the result) of fork-join task \" #NAME")
    lines.append("               \" do not fit in a task record\");")
    lines.append("static inline %s NAME##_fj_body_(%s);" % (rt, decl))
    # A body that takes the arguments from d_ and leaves the result there.
    def call_into_d(decl_d):
        lines.append("{")
        lines.append("    " + decl_d)
        if void:
            if n == 0:
                lines.append("    (void)d_;")
            lines.append("    %s;" % call_body)
        else:
            lines.append("    d_->r = %s;" % call_body)
        lines.append("}")

    # run: a thief's (or a reclaimed task's) way in; the result stays in t.
    lines.append("static COEXEC_FJ_UNUSED_ void NAME##_fj_run_(coexec_fj_t *fj_, coexec_fj_task_t *t_)")
    call_into_d("NAME##_fj_data_ *d_ = (NAME##_fj_data_ *)(void *)t_->data_;")
    # spawn
    sdecl = ", ".join(["coexec_fj_t *fj_"] + ["T%d A%d" % (i, i) for i in range(1, n + 1)])
    lines.append("static COEXEC_FJ_UNUSED_ inline void NAME##_fj_spawn_(%s)" % sdecl)
    lines.append("{")
    lines.append("    coexec_fj_task_t *t_ = coexec_fj_push_(fj_);")
    lines.append("    NAME##_fj_args_ a_ = %s;" % init)
    lines.append("    t_->run_ = NAME##_fj_run_;")
    lines.append("    t_->thief_ = 0;")
    lines.append("    ((NAME##_fj_data_ *)(void *)t_->data_)->a = a_;")
    lines.append("    coexec_fj_pushed_(fj_);")
    lines.append("}")
    # sync
    lines.append("static COEXEC_FJ_UNUSED_ inline %s NAME##_fj_sync_(coexec_fj_t *fj_)" % rt)
    lines.append("{")
    lines.append("    coexec_fj_task_t *t_ = --fj_->head_;")
    lines.append("    NAME##_fj_data_ *d_ = (NAME##_fj_data_ *)(void *)t_->data_;")
    if n == 0:
        lines.append("    (void)d_;")
    lines.append("    if (COEXEC_FJ_LIKELY_(t_ >= fj_->split_))")
    lines.append("        %s%s;" % ("" if void else "return ", call_body))
    if void:
        lines.append("    else")
        lines.append("        coexec_fj_sync_slow_(fj_, t_);")
    else:
        lines.append("    d_ = (NAME##_fj_data_ *)(void *)coexec_fj_sync_slow_(fj_, t_)->data_;")
        lines.append("    return d_->r;")
    lines.append("}")
    # root: coexec_fj_run's function, and the typed way to open a region
    lines.append("static COEXEC_FJ_UNUSED_ void NAME##_fj_root_fn_(coexec_fj_t *fj_, void *p_)")
    call_into_d("NAME##_fj_root_ *d_ = (NAME##_fj_root_ *)p_;")
    odecl = ", ".join((["RTYPE *out_"] if not void else []) +
                      ["T%d A%d" % (i, i) for i in range(1, n + 1)])
    if not odecl:
        odecl = "void"
    lines.append("static COEXEC_FJ_UNUSED_ inline int NAME##_fj_open_(%s)" % odecl)
    lines.append("{")
    lines.append("    NAME##_fj_root_ d_;")
    lines.append("    d_.a = (NAME##_fj_args_)%s;" % init)
    lines.append("    int rc_ = coexec_fj_run(NAME##_fj_root_fn_, &d_);")
    if not void:
        lines.append("    if (rc_ == 0 && out_)")
        lines.append("        *out_ = d_.r;")
    lines.append("    return rc_;")
    lines.append("}")
    lines.append("static inline %s NAME##_fj_body_(%s)" % (rt, decl))
    width = max(len(l) for l in lines) + 1
    width = max(width, 79)
    out = [l.ljust(width) + "\\" for l in lines[:-1]] + [lines[-1]]
    return "\n".join(out) + "\n"


def main():
    w = sys.stdout.write
    w("/*\n"
      " * coexec/fj_tasks.h: the task-declaring macros of the fork-join tier,\n"
      " * for 0 to %d arguments. Generated by scripts/gen_fj_tasks.py: do not\n"
      " * edit; include <coexec/fj.h>, which documents them.\n"
      " */\n" % MAX_ARGS)
    w("#ifndef COEXEC_FJ_TASKS_H\n#define COEXEC_FJ_TASKS_H\n\n")
    for n in range(MAX_ARGS + 1):
        w(task_macro(n, False))
        w("\n")
        w(task_macro(n, True))
        w("\n")
    w("#endif /* COEXEC_FJ_TASKS_H */\n")


if __name__ == "__main__":
    main()
