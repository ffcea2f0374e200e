/* The trainer's checkpoints: its configuration as a checkpoint's meta,
 * saving the lowest chip's state at a step boundary, and loading one to
 * resume from (include/ftmesh/checkpoint.h has the file). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/checkpoint.h"
#include "ftmesh/error.h"
#include "train_int.h"

void train_ckpt_meta(const ftm_train_opts *o, size_t nparams, ftm_ckpt_meta *mt)
{
    memset(mt, 0, sizeof *mt);
    mt->model = o->model;
    mt->model.max_batch = 0;
    mt->model.data = NULL;
    mt->optim = o->optim;
    if (!mt->optim.kind)
        ftm_optim_config_default(&mt->optim, o->model.kind);
    mt->batch = o->batch;
    mt->micro = o->micro;
    mt->exact = o->exact;
    mt->data_id = o->data_id;
    mt->nparams = nparams;
}

int train_model_nparams(const ftm_train_opts *o, size_t *np)
{
    ftm_model_config mc = o->model;
    mc.max_batch = 1;
    ftm_model *tmp;
    int rc = ftm_model_create(&tmp, &mc);
    if (rc)
        return rc;
    *np = ftm_model_nparams(tmp);
    ftm_model_destroy(tmp);
    return 0;
}

/* The directed links lost without anybody noticing into gone[nchips *
 * 4]: f's from earlier attempts and those rt (the running attempt's
 * runtime, or NULL) lost. In a run over processes a link that another
 * process's chip killed is dead here too (every process is told). */
static int lost_links(const ftm_rt_script *f, const ftm_rt *rt, int nchips, unsigned char *gone)
{
    int n = nchips * FTM_NDIRS, *lc = rt ? malloc(sizeof(int) * (size_t)n * 2) : NULL;
    if (rt && !lc)
        return FTM_ENOMEM;
    int nl = rt ? ftm_rt_killed_links(rt, lc, lc + n, n) : 0;
    for (int k = 0; k < nl; k++)
        gone[lc[k] * FTM_NDIRS + lc[n + k]] = 1;
    for (int k = 0; k < f->nsecret; k++)
        gone[f->secret_chip[k] * FTM_NDIRS + f->secret_dir[k]] = 1;
    free(lc);
    return 0;
}

/* The ways of link kill e (way[1] -1 for one way); 0, or -1 if none. */
static int ev_ways(const ftm_mesh *mesh, const ftm_fault_event *e, int way[2])
{
    int a = ftm_mesh_chip(mesh, e->r, e->c), b = ftm_mesh_chip(mesh, e->r2, e->c2);
    int d = ftm_mesh_dir_to(mesh, a, b);
    if (d < 0)
        return -1;
    way[0] = a * FTM_NDIRS + d;
    way[1] = e->oneway ? -1 : b * FTM_NDIRS + ftm_dir_opposite(d);
    return 0;
}

/* 1 when kill i of f is a link's that struck before step `done` without
 * anybody noticing yet (its record is still to come, so the checkpoint
 * keeps it). fired[i] of such an event was written before the step's
 * barrier, in its victim's process (elsewhere, 0 until the run ends: its
 * link is dead in gone); a later one's is not read (its victim may be
 * writing it). */
static int lost_unnoticed(const ftm_rt_script *f, int i, long done, const ftm_mesh *mesh,
                          const unsigned char *gone)
{
    const ftm_fault_event *e = &f->script.ev[i];
    int way[2];
    if (e->kind != FTM_FAULT_LINK || e->repair || e->when >= done || f->fired[i] < 0 ||
        f->logged[i] || ev_ways(mesh, e, way))
        return 0;
    return f->fired[i] > 0 || gone[way[0]] || (way[1] >= 0 && gone[way[1]]);
}

/* Marks 2 (dead, nobody noticed) in link_dead: f's unnoticed links from
 * earlier attempts, and the ways of its unnoticed kills before `done`
 * that were lost (gone). A chip may be in step `done` already, killing a
 * link of that step: that one is still to come, not marked. */
static void mark_lost(const ftm_rt_script *f, const ftm_mesh *mesh, long done,
                      const unsigned char *gone, unsigned char *link_dead)
{
    for (int i = 0; i < f->script.n; i++) {
        int way[2];
        if (!lost_unnoticed(f, i, done, mesh, gone) || ev_ways(mesh, &f->script.ev[i], way))
            continue;
        for (int k = 0; k < 2; k++)
            if (way[k] >= 0 && gone[way[k]] && !link_dead[way[k]])
                link_dead[way[k]] = 2;
    }
    for (int k = 0; k < f->nsecret; k++)
        if (!link_dead[f->secret_chip[k] * FTM_NDIRS + f->secret_dir[k]])
            link_dead[f->secret_chip[k] * FTM_NDIRS + f->secret_dir[k]] = 2;
}

/* The events still to come after step `done`, and the unnoticed link
 * kills before it (a resumed run tells them when they are noticed or
 * repaired, as the run without a stop would), one per line into st. */
static int ckpt_script(const ftm_rt_script *f, long done, const ftm_mesh *mesh,
                       const unsigned char *gone, ftm_ckpt_state *st)
{
    size_t cap = 1, len = 0;
    for (int i = 0; f && i < f->script.n; i++)
        cap += 96;
    if (!(st->script = malloc(cap)))
        return FTM_ENOMEM;
    for (int i = 0; f && i < f->script.n; i++) {
        if (f->script.ev[i].when < done && !lost_unnoticed(f, i, done, mesh, gone))
            continue; /* played: the mesh holds what it did */
        int w = ftm_fault_format(&f->script.ev[i], FTM_FAULT_TRAIN, st->script + len, cap - len);
        if (w > 0 && (size_t)w + 1 < cap - len) {
            len += (size_t)w;
            st->script[len++] = '\n';
        }
    }
    st->script_len = len;
    return 0;
}

/* The mesh at step `done` into st (freed by the caller: chip_dead,
 * script): 1 for a dead chip or a link known dead, 2 for a link lost
 * without anybody noticing yet (see mark_lost); and f's events. */
static int ckpt_mesh(const ftm_mesh *mesh, const ftm_rt_script *f, const ftm_rt *rt, long done,
                     ftm_ckpt_state *st)
{
    size_t nc = (size_t)mesh->nchips;
    unsigned char *gone = calloc(nc * FTM_NDIRS, 1);
    if (!gone || !(st->chip_dead = malloc(5 * nc))) {
        free(gone);
        return FTM_ENOMEM;
    }
    st->rows = mesh->rows;
    st->cols = mesh->cols;
    st->torus = mesh->torus;
    st->link_dead = st->chip_dead + nc;
    for (size_t i = 0; i < nc; i++)
        st->chip_dead[i] = !ftm_mesh_alive(mesh, (int)i);
    for (size_t i = 0; i < nc * FTM_NDIRS; i++)
        st->link_dead[i] = mesh->link_dead[i] != 0;
    int rc = f ? lost_links(f, rt, mesh->nchips, gone) : 0;
    if (!rc && f)
        mark_lost(f, mesh, done, gone, st->link_dead);
    if (!rc)
        rc = ckpt_script(f, done, mesh, gone, st);
    free(gone);
    return rc;
}

int train_ckpt_save(const ftm_train_opts *o, ftm_model *m, ftm_optim *opt, long done,
                    const ftm_train_step *steps, const ftm_mesh *mesh, const ftm_rt_script *f,
                    const ftm_rt *rt, char *detail, size_t dlen)
{
    ftm_ckpt_meta mt;
    size_t np = ftm_model_nparams(m);
    train_ckpt_meta(o, np, &mt);
    ftm_ckpt_state st;
    memset(&st, 0, sizeof st);
    st.step = done;
    st.examples = (uint64_t)done * (uint64_t)o->batch;
    st.nparams = np;
    st.params = ftm_model_params(m);
    st.nmoments = ftm_ckpt_nmoments(mt.optim.kind);
    ftm_optim_moments(opt, &st.moment[0], &st.moment[1]);
    st.losses = malloc(sizeof(double) * (size_t)(done ? done : 1));
    int rc = st.losses ? ckpt_mesh(mesh, f, rt, done, &st) : FTM_ENOMEM;
    for (long i = 0; i < done && !rc; i++)
        st.losses[i] = steps[i].loss;
    if (!rc)
        rc = ftm_ckpt_save(o->checkpoint, &mt, &st, detail, dlen);
    free(st.losses);
    free(st.chip_dead);
    free(st.script);
    return rc;
}

int train_ckpt_load(const ftm_train_opts *o, size_t nparams, ftm_ckpt_state *st,
                    char *detail, size_t dlen)
{
    ftm_ckpt_meta mt;
    train_ckpt_meta(o, nparams, &mt);
    int rc = ftm_ckpt_load(o->resume, &mt, NULL, st, detail, dlen);
    if (rc)
        return rc;
    if (st->step > o->steps) {
        ftm_ckpt_state_free(st);
        snprintf(detail, dlen, "the checkpoint is at step %ld, past --steps %ld", st->step, o->steps);
        return FTM_ERANGE;
    }
    return 0;
}

/* 0 when every event of s names chips and links of m's shape; else
 * FTM_EFORMAT and why (a file with a valid checksum may still name a chip
 * outside its own mesh). Each event is tried as a kill on a healthy mesh
 * of that shape, which refuses only what lies outside it. */
static int ck_script_fits(const ftm_fault_script *s, const ftm_mesh *m, char *detail,
                          size_t dlen)
{
    int rc = 0;
    for (int i = 0; i < s->n && !rc; i++) {
        ftm_mesh t;
        ftm_fault_event e = s->ev[i];
        e.repair = 0;
        if ((rc = ftm_mesh_init(&t, m->rows, m->cols, m->torus)))
            return rc;
        int a = ftm_fault_apply(&t, &e);
        ftm_mesh_free(&t);
        if (a == FTM_ERANGE || a == FTM_ENOTNEIGHBOR) {
            char what[64];
            ftm_fault_format(&s->ev[i], FTM_FAULT_TRAIN, what, sizeof what);
            snprintf(detail, dlen, "its fault script: %s is not on its %dx%d mesh", what,
                     m->rows, m->cols);
            rc = FTM_EFORMAT;
        }
    }
    return rc;
}

int train_ckpt_mesh(const ftm_ckpt_state *st, ftm_mesh *m, unsigned char *lost,
                    ftm_fault_script *pending, char *detail, size_t dlen)
{
    if (!st->rows || st->rows != m->rows || st->cols != m->cols || st->torus != m->torus)
        return 0; /* none recorded, or another shape: the run's own mesh rules */
    for (int i = 0; i < m->nchips; i++)
        m->chip_dead[i] = st->chip_dead[i];
    for (int i = 0; i < m->nchips * FTM_NDIRS; i++) {
        int unnoticed = st->link_dead[i] == 2 && lost;
        m->link_dead[i] = st->link_dead[i] && !unnoticed;
        if (lost)
            lost[i] = (unsigned char)unnoticed;
    }
    /* a file with a valid checksum may still hold a mesh no run can have */
    int rc = ftm_mesh_check_connected(m, NULL, NULL);
    if (rc) {
        snprintf(detail, dlen, "its mesh %s", rc == FTM_EALLDEAD ? "has no live chip"
                                              : "has its live chips cut into parts");
        return FTM_EFORMAT;
    }
    char why[200];
    rc = pending ? ftm_fault_script_parse_text(pending, st->script, st->script_len, 0, why,
                                               sizeof why) : 0;
    if (rc)
        snprintf(detail, dlen, "its fault script: %s", why);
    return rc || !pending ? rc : ck_script_fits(pending, m, detail, dlen);
}

int ftm_train_resume_step(const ftm_train_opts *o, long *step, ftm_mesh *m,
                          ftm_fault_script *pending, char *detail, size_t dlen)
{
    size_t np;
    ftm_ckpt_state st;
    detail[0] = 0;
    int rc = o->resume ? train_model_nparams(o, &np) : FTM_EINVAL;
    if (rc || (rc = train_ckpt_load(o, np, &st, detail, dlen)))
        return rc;
    *step = st.step;
    if (m)
        rc = train_ckpt_mesh(&st, m, NULL, pending, detail, dlen);
    ftm_ckpt_state_free(&st);
    return rc;
}
