/* The memory this process may use, for the checks that refuse a run
 * whose buffers would not fit (instead of the kernel killing it). */
#include "cli.h"
#include "ftmesh/error.h"
#include "ftmesh/model.h"
#include "ftmesh/runtime.h"
#include "ftmesh/train.h"

#include <stdio.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* The address space this process already holds (libraries, OpenBLAS's
 * buffers, thread stacks), from /proc/self/statm; 0 where unknown. */
static double mem_mapped(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    long psize = sysconf(_SC_PAGESIZE);
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return psize > 0 ? (double)pages * (double)psize : 0;
}

void cli_mem_arenas(void)
{
#ifdef M_ARENA_MAX
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        mallopt(M_ARENA_MAX, 2);
#endif
}

/* mem_mapped once it holds still: OpenBLAS's worker threads map their
 * buffers (128 MiB each here) a moment after the process starts, so one
 * early reading refused the same run at random. Reads 5 ms apart until
 * three agree (at most 40 readings); the most it saw. A thread that
 * starts later still (a loaded machine) can escape it: the 3/4 rule's
 * margin is what covers that. */
static double mem_settled(void)
{
    double most = mem_mapped(), last = most;
    struct timespec gap = { 0, 5000000 };
    for (int i = 0, same = 0; i < 40 && same < 2; i++) {
        nanosleep(&gap, NULL);
        double now = mem_mapped();
        same = now == last ? same + 1 : 0;
        last = now;
        most = now > most ? now : most;
    }
    return most;
}

static double mem_have = -1;
static int mem_by_limit; /* 1 when the address-space limit sets mem_have */
static double mem_as_left; /* address space left under ulimit -v (0: no limit) */

double cli_mem_have(void)
{
    if (mem_have >= 0)
        return mem_have;
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    mem_have = pages > 0 && psize > 0 ? (double)pages * (double)psize : 0;
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        double left = (double)rl.rlim_cur - mem_settled();
        left = left > 1 ? left : 1; /* nothing left: refuse, never "unknown" */
        mem_as_left = left;
        mem_by_limit = mem_have == 0 || left < mem_have;
        mem_have = mem_by_limit ? left : mem_have;
    }
    return mem_have;
}

/* Address space: each chip thread reserves its whole stack. */
static double whole_stacks(const ftm_mesh *m)
{
    return (double)cli_ranks_block_chips(m) * (double)(FTM_RT_STACK_BYTES - FTM_RT_STACK_TOUCHED);
}

double cli_mem_stacks(const ftm_mesh *m)
{
    if (cli_mem_have() <= 0 || !mem_by_limit) /* memory: the stack touched counts */
        return 0;
    return whole_stacks(m);
}

/* bytes as "1.4 GiB" or, under 1 GiB, "390 MiB" (into b, 32 bytes). */
static const char *mem_words(double bytes, char *b)
{
    double G = 1 << 30;
    if (bytes >= G)
        snprintf(b, 32, "%.1f GiB", bytes / G);
    else
        snprintf(b, 32, "%.0f MiB", bytes / (1 << 20));
    return b;
}

const char *cli_mem_stacks_note(double stacks)
{
    static char note[96];
    char w[32];
    note[0] = 0;
    if (stacks >= 0.05 * (1 << 30)) /* as the messages round GiB */
        snprintf(note, sizeof note, ", chip thread stacks %.1f GiB (ulimit -v counts each "
                 "whole)", stacks / (1 << 30));
    else if (stacks >= 1 << 20)
        snprintf(note, sizeof note, ", chip thread stacks %s (ulimit -v counts each whole)",
                 mem_words(stacks, w));
    return note;
}

/* The bytes a replica of t's model holds for count examples in
 * micro-batches of micro, counted by making one. */
static int replica_count(const ftm_train_opts *t, long count, int micro, size_t *bytes)
{
    ftm_model_config mc = t->model;
    mc.max_batch = (int)count;
    mc.micro = micro;
    return ftm_model_mem_bytes(&mc, bytes);
}

/* The bytes one replica of t's model holds for count examples in
 * micro-batches of micro (0: one batch). The parameters are fixed, and
 * the bytes grow by the same amount with every example and with every
 * example of a micro-batch (resnet holds every example's activations,
 * bert one micro-batch's and a table entry an example), so beyond a few
 * examples they are drawn through three small replicas instead of made:
 * a replica of a huge batch or micro-batch is never made only to be
 * counted (it failed, or under AddressSanitizer aborted, where the
 * machine cannot reserve it). tests/test_model.c holds the bytes to it. */
#define REPLICA_SMALL 4
static int replica_bytes(const ftm_train_opts *t, long count, int micro, size_t *bytes)
{
    if (count <= REPLICA_SMALL && micro <= REPLICA_SMALL)
        return replica_count(t, count, micro, bytes);
    size_t f21, f41, f42; /* f(examples, micro-batch) */
    int rc = replica_count(t, 2, 1, &f21);
    rc = rc ? rc : replica_count(t, 4, 1, &f41);
    rc = rc ? rc : replica_count(t, 4, 2, &f42);
    if (rc)
        return rc;
    double per = ((double)f41 - (double)f21) / 2, per_micro = (double)f42 - (double)f41;
    double m = micro > 0 && micro < count ? micro : (double)count;
    double base = (double)f21 - 2 * per - per_micro;
    *bytes = (size_t)(base + per * (double)count + per_micro * m);
    return 0;
}

/* The most examples a chip gets from the batch split, and its micro. */
static int most_examples(const ftm_train_opts *t, int chips, long *most, int *micro)
{
    long *first = calloc((size_t)chips, sizeof *first), *count = calloc((size_t)chips, sizeof *count);
    *micro = t->micro;
    int rc = first && count ? ftm_train_split(t->batch, t->micro, t->exact, chips, first, count, micro)
                            : FTM_ENOMEM;
    *most = 1;
    for (int i = 0; i < chips && !rc; i++)
        *most = count[i] > *most ? count[i] : *most;
    free(first);
    free(count);
    return rc;
}

/* What would make a refused training fit: where the replicas' parameters
 * and one micro-batch already fill the share, no batch helps, only fewer
 * chips (each holds a replica). */
static const char *mem_advice(const ftm_train_opts *t, const ftm_mesh *m, double have,
                              double stacks)
{
    size_t least = 0;
    int chips = cli_ranks_block_chips(m) * cli_ranks_on_node();
    if (!replica_count(t, 1, 1, &least) &&
        (double)least * chips + stacks > CLI_MEM_SHARE * have)
        return "use a smaller mesh (each chip holds a replica, whatever the batch)";
    if (t->model.kind == FTM_MODEL_RESNET) /* a replica holds all its examples at once */
        return "use a smaller --batch (--micro does not lower a resnet's memory)";
    return "use a smaller --batch or --micro";
}

/* Under an address-space limit (ulimit -v) each chip thread that calls
 * OpenBLAS maps a buffer of its own: 128 MiB with Debian's OpenBLAS 0.3
 * (its BUFFER_SIZE, seen as malloc(134221824) per calling thread). Where
 * that mapping fails OpenBLAS retries without end: the run hung, so it is
 * counted before the run. Memory only counts the pages touched. */
#define CLI_BLAS_BUFFER ((double)(128 << 20) + 4096)
static double blas_buffers(const ftm_mesh *m)
{
    return CLI_BLAS_BUFFER * cli_ranks_block_chips(m);
}

/* 1 when a training's need (base: the replicas) is held to the address
 * space left under ulimit -v, beside the chip threads' whole stacks and
 * OpenBLAS buffers: where that limit is below the machine's memory, or
 * (above it) where they would not fit in 3/4 of it; else to the memory,
 * which only the pages touched fill. */
static int train_by_limit(const ftm_mesh *m, double base)
{
    cli_mem_have();
    return mem_as_left > 0 && (mem_by_limit || base + whole_stacks(m) + blas_buffers(m) >
                                                   CLI_MEM_SHARE * mem_as_left);
}

int cli_train_mem_check(const char *cmd, const ftm_train_opts *t, const ftm_mesh *m)
{
    double have = cli_mem_have(), blas = 0, stacks = 0;
    long most;
    int micro, chips = cli_ranks_block_chips(m), local = cli_ranks_on_node();
    size_t one = 0, ref = 0;
    int rc = most_examples(t, ftm_mesh_healthy_count(m), &most, &micro);
    if (!rc)
        rc = replica_bytes(t, most, micro, &one);
    if (!rc && t->check) /* the one-chip reference holds the whole batch */
        rc = replica_bytes(t, t->batch, micro, &ref);
    double need = (double)one * chips * local + (double)ref;
    if (train_by_limit(m, need)) {
        have = mem_as_left;
        stacks = whole_stacks(m);
        blas = blas_buffers(m);
        need += stacks + blas;
    }
    if (rc == FTM_ENOMEM && one == 0) /* not even drawn: a few huge micro-batches */
        return cli_usage_error(cmd, "--batch %ld --micro %d: one replica (%ld examples) needs more "
                               "memory than this machine can reserve: use a smaller --micro or "
                               "--batch, or more chips", t->batch, micro, most);
    if (rc == FTM_ENOMEM || (!rc && have > 0 && need > CLI_MEM_SHARE * have)) {
        char nw[32], hw[32], bw[96] = "";
        if (blas > 0)
            snprintf(bw, sizeof bw, ", OpenBLAS buffers %d x %.0f MiB (one per chip thread)",
                     chips, CLI_BLAS_BUFFER / (1 << 20));
        return cli_usage_error(cmd, "--batch %ld needs about %s: %d replica%s of %.0f MiB "
                               "(up to %ld example%s each)%s%s%s, more than 3/4 of the %s this "
                               "process may use: %s", t->batch, mem_words(need, nw), chips * local,
                               cli_s(chips * local), (double)one / (1 << 20), most, cli_s(most),
                               t->check ? " and the --check reference" : "",
                               cli_mem_stacks_note(stacks), bw, mem_words(have, hw),
                               mem_advice(t, m, have, stacks + blas));
    }
    return 0; /* a model that cannot be made is the run's to report */
}
