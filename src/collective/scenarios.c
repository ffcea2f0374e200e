/* The pod scenarios as data (sweep.h): the tori, the gradients and the
 * faults that ftmesh sweep, sweep --throughput and the tests model, each
 * fault written once, as the command-line options that reproduce it. */
#include "ftmesh/sweep.h"
#include "ftmesh/error.h"

#include <stdio.h>
#include <string.h>

/* One fault near the middle of each torus (on a torus every place is
 * alike); two hosts half a torus apart (no row or column cut twice), and
 * four of which two share rows (cut twice: the segments' case). The last
 * one is not a sweep row: two hosts in the same rows (tests/test_pod.c). */
static const ftm_sweep_scenario scen[] = {
    { "healthy", "healthy", 1, { "", "" } },
    { "dead-host", "dead-host", 1, { "--fail-host 8,16", "--fail-host 16,16" } },
    { "dead-chip", "dead-chip", 1, { "--fail 8,16", "--fail 16,16" } },
    { "dead-link", "dead-link", 1, { "--fail-link 8,16-8,17", "--fail-link 16,16-16,17" } },
    { "two-hosts", "two-dead-hosts", 1,
      { "--fail-host 4,8 --fail-host 12,24", "--fail-host 8,8 --fail-host 24,24" } },
    { "four-hosts", NULL, 1,
      { "--fail-host 2,6 --fail-host 2,22 --fail-host 8,12 --fail-host 12,28",
        "--fail-host 4,6 --fail-host 4,22 --fail-host 18,10 --fail-host 24,26" } },
    { "two-hosts-same-rows", NULL, 0,
      { "--fail-host 4,4 --fail-host 4,20", "--fail-host 8,4 --fail-host 8,20" } },
};

static const ftm_sweep_pod pod = {
    { { 16, 32 }, { 32, 32 } },
    { "resnet50", "bert-large" },
    /* fp32 gradients: ResNet-50 25.6M parameters, BERT-large 340M */
    { 25600000, 340000000 },
    scen,
    sizeof scen / sizeof scen[0],
};

const ftm_sweep_pod *ftm_sweep_pod_data(void)
{
    return &pod;
}

/* One option of the fault text at *t: applies it to m and moves *t past
 * it. The options are the CLI's (--fail, --fail-host, --fail-link both
 * ways). */
static int apply_one(ftm_mesh *m, const char **t)
{
    char opt[16];
    int r, c, r2, c2, used = 0;
    if (sscanf(*t, " %15s %d,%d%n", opt, &r, &c, &used) != 3)
        return FTM_EINVAL;
    *t += used;
    if (!strcmp(opt, "--fail"))
        return ftm_mesh_fail_chip(m, r, c);
    if (!strcmp(opt, "--fail-host"))
        return ftm_mesh_fail_host(m, r, c);
    if (strcmp(opt, "--fail-link") != 0 || sscanf(*t, "-%d,%d%n", &r2, &c2, &used) != 2)
        return FTM_EINVAL;
    *t += used;
    return ftm_mesh_fail_link(m, r, c, r2, c2, 0);
}

int ftm_sweep_scenario_mesh(ftm_mesh *m, int mesh, const ftm_sweep_scenario *s)
{
    if (mesh < 0 || mesh >= FTM_SWEEP_NMESHES || !s)
        return FTM_EINVAL;
    int rc = ftm_mesh_init(m, pod.rc[mesh][0], pod.rc[mesh][1], 1);
    if (rc)
        return rc;
    const char *t = s->fault[mesh];
    while (!rc && t[strspn(t, " ")])
        rc = apply_one(m, &t);
    if (rc)
        ftm_mesh_free(m);
    return rc;
}
