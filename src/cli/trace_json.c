/* --trace FILE: a recorded run as Chrome trace-event JSON (opens in
 * ui.perfetto.dev and chrome://tracing).
 *
 * One process "ftmesh"; per chip a track "chip (r,c)" with its executions,
 * steps, waits and training phases (these nest), and beside it lanes for
 * its sends, receives and forwarded traffic: ops of one step run
 * concurrently and would not nest on one track, so each lane holds ops
 * that do not overlap (greedy interval partitioning). Times are
 * microseconds ("ts", "dur") on the chosen clock.
 */
#include "cli.h"
#include "trace_json.h"
#include "ftmesh/error.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LANE_MAIN, LANE_SEND, LANE_RECV, LANE_FWD, LANE_KINDS };
enum { LANES = 16, TID_PER_CHIP = LANE_KINDS * LANES };

static const char *const lane_names[LANE_KINDS] = { "", " send", " recv", " forward" };

static int lane_kind(int kind)
{
    switch (kind) {
    case FTM_EV_SEND: return LANE_SEND;
    case FTM_EV_RECV: return LANE_RECV;
    case FTM_EV_FORWARD: return LANE_FWD;
    default: return LANE_MAIN;
    }
}

typedef struct ord { size_t i; int chip, lk; double t0, t1; } ord;

static int ord_cmp(const void *a, const void *b)
{
    const ord *x = a, *y = b;
    if (x->chip != y->chip)
        return x->chip < y->chip ? -1 : 1;
    if (x->lk != y->lk)
        return x->lk < y->lk ? -1 : 1;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return (x->t1 < y->t1) - (x->t1 > y->t1); /* the enclosing slice first */
}

/* tid of every slice: the chip's main track, or the first lane of its
 * kind that is free at the slice's start. */
static int assign_tids(const ftm_timeline *tl, int *tid)
{
    ord *o = malloc(sizeof *o * (tl->n ? tl->n : 1));
    if (!o)
        return FTM_ENOMEM;
    for (size_t i = 0; i < tl->n; i++)
        o[i] = (ord){ i, tl->slice[i].ev->chip, lane_kind(tl->slice[i].ev->kind),
                      tl->slice[i].t0, tl->slice[i].t1 };
    qsort(o, tl->n, sizeof *o, ord_cmp);
    double end[LANES];
    for (size_t i = 0; i < tl->n; i++) {
        if (i == 0 || o[i].chip != o[i - 1].chip || o[i].lk != o[i - 1].lk)
            for (int l = 0; l < LANES; l++)
                end[l] = -1;
        int l = 0;
        if (o[i].lk != LANE_MAIN) /* LANES - 1 takes the rest if all are busy */
            while (l < LANES - 1 && end[l] > o[i].t0)
                l++;
        if (o[i].t1 > end[l])
            end[l] = o[i].t1;
        tid[o[i].i] = 1 + o[i].chip * TID_PER_CHIP + o[i].lk * LANES + l;
    }
    free(o);
    return 0;
}

static void chip_name(char *b, size_t n, const ftm_mesh *m, int chip)
{
    snprintf(b, n, "(%d,%d)", ftm_mesh_row(m, chip), ftm_mesh_col(m, chip));
}

static void slice_name(char *b, size_t n, const ftm_mesh *m, const ftm_event *e)
{
    char peer[32] = "";
    if (e->peer >= 0)
        chip_name(peer, sizeof peer, m, e->peer);
    switch (e->kind) {
    case FTM_EV_EXEC: snprintf(b, n, "allreduce %s", e->name); break;
    case FTM_EV_STEP: snprintf(b, n, "step %d %s", e->step, e->name); break;
    case FTM_EV_SEND: snprintf(b, n, "send to %s", peer); break;
    case FTM_EV_RECV: snprintf(b, n, "%s from %s", e->name, peer); break;
    case FTM_EV_FORWARD:
        snprintf(b, n, "forward %s's %s", peer, e->dir >= 0 ? ftm_mesh_dir_name(e->dir) : "?");
        break;
    default: snprintf(b, n, "%s", e->name[0] ? e->name : ftm_trace_ev_kind_name(e->kind)); break;
    }
}

static void write_args(cli_json *j, const ftm_mesh *m, const ftm_event *e)
{
    char peer[32];
    cli_json_begin_obj(j, "args");
    cli_json_str(j, "kind", ftm_trace_ev_kind_name(e->kind));
    if (e->peer >= 0) {
        chip_name(peer, sizeof peer, m, e->peer);
        cli_json_str(j, "peer", peer);
    }
    if (e->kind == FTM_EV_FAIL) { /* which chip died, not only its lane */
        chip_name(peer, sizeof peer, m, e->chip);
        cli_json_str(j, "chip", peer);
    }
    if (e->kind == FTM_EV_SEND || e->kind == FTM_EV_RECV || e->kind == FTM_EV_FORWARD) {
        cli_json_u64(j, "bytes", e->len);
        cli_json_u64(j, "tag", e->tag);
    }
    if (e->step >= 0)
        cli_json_int(j, "step", e->step);
    if (e->sched >= 0) {
        cli_json_int(j, "run", e->run);
        cli_json_int(j, "exec", e->exec);
    }
    cli_json_end(j);
}

static void meta(cli_json *j, int tid, const char *what, const char *key, const char *sval,
                 int ival)
{
    cli_json_begin_obj(j, NULL);
    cli_json_str(j, "ph", "M");
    cli_json_int(j, "pid", 1);
    cli_json_int(j, "tid", tid);
    cli_json_str(j, "name", what);
    cli_json_begin_obj(j, "args");
    if (sval)
        cli_json_str(j, key, sval);
    else
        cli_json_int(j, key, ival);
    cli_json_end(j);
    cli_json_end(j);
}

/* Track names: the chip's main track, then each lane that holds a slice. */
static void write_names(cli_json *j, const ftm_mesh *m, const ftm_timeline *tl, const int *tid)
{
    size_t ntid = (size_t)m->nchips * TID_PER_CHIP + 1;
    unsigned char *used = calloc(ntid, 1);
    for (size_t i = 0; used && i < tl->n; i++)
        used[tid[i]] = 1;
    for (int c = 0; c < m->nchips; c++) {
        if (!ftm_mesh_alive(m, c) && !(used && used[1 + c * TID_PER_CHIP]))
            continue;
        for (int k = 0; k < TID_PER_CHIP; k++) {
            int t = 1 + c * TID_PER_CHIP + k;
            if (k && !(used && used[t]))
                continue;
            char cn[32], name[96];
            chip_name(cn, sizeof cn, m, c);
            int lane = k % LANES;
            snprintf(name, sizeof name, "chip %s%s", cn, lane_names[k / LANES]);
            if (lane)
                snprintf(name + strlen(name), sizeof name - strlen(name), " %d", lane + 1);
            meta(j, t, "thread_name", "name", name, 0);
            meta(j, t, "thread_sort_index", "sort_index", NULL, t);
        }
    }
    free(used);
}

static void write_slice(cli_json *j, const ftm_mesh *m, const ftm_slice *s, int tid)
{
    char name[96];
    slice_name(name, sizeof name, m, s->ev);
    cli_json_begin_obj(j, NULL);
    cli_json_str(j, "ph", "X");
    cli_json_int(j, "pid", 1);
    cli_json_int(j, "tid", tid);
    cli_json_str(j, "name", name);
    cli_json_str(j, "cat", ftm_trace_ev_kind_name(s->ev->kind));
    /* both ends rounded to the picosecond first, so that a slice ending
     * where the next begins never overlaps it once printed (as doubles: a
     * long long would overflow past 107 days of modeled time) */
    double a = rint(s->t0 * 1e12), b = rint(s->t1 * 1e12);
    cli_json_num(j, "ts", "%.6f", a / 1e6);
    cli_json_num(j, "dur", "%.6f", (b - a) / 1e6);
    write_args(j, m, s->ev);
    cli_json_end(j);
}

int cli_trace_write(FILE *f, const ftm_trace *tr, const ftm_mesh *m, int clock,
                    const ftm_cost_params *cp)
{
    return cli_trace_write_meta(f, tr, m, clock, cp, NULL, NULL);
}

int cli_trace_write_meta(FILE *f, const ftm_trace *tr, const ftm_mesh *m, int clock,
                         const ftm_cost_params *cp, cli_trace_meta_fn meta_fn, void *ctx)
{
    ftm_timeline tl;
    int rc = ftm_timeline_build(tr, clock, cp, &tl);
    if (rc)
        return rc;
    int *tid = malloc(sizeof *tid * (tl.n ? tl.n : 1));
    if (!tid || assign_tids(&tl, tid)) {
        free(tid);
        ftm_timeline_free(&tl);
        return FTM_ENOMEM;
    }
    char mesh[32];
    snprintf(mesh, sizeof mesh, "%dx%d", m->rows, m->cols);
    cli_json j;
    cli_json_init(&j, f);
    cli_json_begin_obj(&j, NULL);
    cli_json_str(&j, "displayTimeUnit", "ns");
    cli_json_begin_obj(&j, "otherData");
    cli_json_str(&j, "clock", clock == FTM_CLOCK_MODELED ? "modeled" : "wall");
    cli_json_num(&j, "span_us", "%.6f", tl.span_s * 1e6);
    cli_json_str(&j, "mesh", mesh);
    cli_json_bool(&j, "torus", cli_wraps(m));
    if (meta_fn)
        meta_fn(&j, ctx);
    cli_json_end(&j);
    cli_json_begin_arr(&j, "traceEvents");
    cli_json_begin_obj(&j, NULL);
    cli_json_str(&j, "ph", "M");
    cli_json_int(&j, "pid", 1);
    cli_json_str(&j, "name", "process_name");
    cli_json_begin_obj(&j, "args");
    cli_json_str(&j, "name", "ftmesh");
    cli_json_end(&j);
    cli_json_end(&j);
    write_names(&j, m, &tl, tid);
    for (size_t i = 0; i < tl.n; i++)
        write_slice(&j, m, &tl.slice[i], tid[i]);
    cli_json_end(&j);
    cli_json_end(&j);
    free(tid);
    ftm_timeline_free(&tl);
    return ferror(f) ? FTM_EIO : 0;
}

int cli_trace_open(const char *cmd, cli_out *o, const char *path, ftm_trace **rec, int nchips)
{
    int rc = cli_out_open(cmd, o, "--trace", path);
    if (rc)
        return rc;
    if (ftm_trace_create(rec, nchips, 0)) {
        cli_out_discard(o);
        return cli_error(cmd, "--trace %s: %s", path, ftm_strerror(FTM_ENOMEM));
    }
    return 0;
}

int cli_trace_close(const char *cmd, cli_out *o, const ftm_trace *rec, const ftm_mesh *m,
                    int clock, const ftm_cost_params *cp, cli_trace_meta_fn meta_fn, void *ctx)
{
    int err = cli_trace_write_meta(o->f, rec, m, clock, cp, meta_fn, ctx);
    if (!err)
        err = ftm_trace_error(rec);
    return cli_out_commit(cmd, o, err);
}

int cli_trace_clock(const char *cmd, const char *v, int *clock)
{
    if (strcmp(v, "wall") == 0)
        *clock = FTM_CLOCK_WALL;
    else if (strcmp(v, "modeled") == 0)
        *clock = FTM_CLOCK_MODELED;
    else
        return cli_usage_error(cmd, "--trace-clock %s: expected wall or modeled", v);
    return 0;
}

/* Bytes of the trace of one execution of s: per chip its execution, its
 * steps and ops, the forwards of its sends' routes (one per transit chip),
 * a wait per step, at about 180 bytes of JSON per slice (measured on ring
 * and 2-D traces). An estimate, meant to stay within a factor of two. */
double cli_trace_exec_bytes(const ftm_sched *s)
{
    double ev = 0;
    ftm_sched_view v = { 0 };
    for (int c = 0; c < s->nchips; c++) {
        ftm_sched_cur cur = { 0 };
        ev += 1;
        while (ftm_sched_read_step(s, c, &cur, &v) == 1) {
            ev += 2 + v.nops;
            for (int i = 0; i < v.nops; i++)
                if (v.ops[i].kind == FTM_OP_SEND && v.ops[i].route < (uint64_t)s->nroutes &&
                    s->routes[v.ops[i].route].nhops > 1)
                    ev += s->routes[v.ops[i].route].nhops - 1;
        }
    }
    ftm_sched_view_free(&v);
    return ev * 180;
}
