/* --check: the same training on one chip, and the comparison.
 *
 * The reference calls the model directly on the whole batch [0, B) with the
 * micro-batch size the mesh run used, no hook (one chip holds every
 * example, so its batch-norm sums are already global) and no runtime.
 *
 * Exact mode: gradients are per-micro-batch int64 fixed-point sums and
 * losses exact binned sums (xsum.h), which no sharding or summation order
 * changes, so the parameters and every step's loss must be bitwise equal;
 * nothing else is accepted.
 *
 * Float mode. Two float runs of the same training drift apart: rounding
 * differences of 1e-7 in one step are amplified by the following steps
 * (8x8 mesh with a dead chip, ResNet, B = 256: the final params differ by
 * 3e-3 of the distance training moved them after 10 steps, 3e-4 after 1).
 * So no fixed bound on the final parameters holds for runs of any length;
 * those figures are reported, not judged. What data parallelism promises
 * is per step: at the same parameters, the mesh's summed gradient is the
 * one-chip gradient. The trainer checks exactly that at every step (the
 * lowest chip recomputes the one-chip gradient at the mesh's parameters,
 * src/train/train.c), per tensor as max |g - g_ref| / max |g_ref|, plus
 * the loss relative difference, against FTM_TRAIN_FLOAT_TOL = 1e-4. Why
 * 1e-4: reordering a float32 sum of n terms moves it by at most about
 * n u sum|terms| (u = 2^-24; Higham, Accuracy and Stability of Numerical
 * Algorithms, ch. 4), 1.5e-5 for n = B = 256; measured: 1.2e-6 (ResNet)
 * and 3.5e-6 (BERT) on that mesh. A real bug - one example lost or counted
 * twice - moves a gradient by about 1/B of its scale, >= 2.4e-4 for
 * B <= 4096 (the largest --check batch), and fails.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/error.h"
#include "train_int.h"
#include "core/util.h"

/* Float bits mapped to integers in the same order as the floats, so the
 * difference of two is their distance in ULPs (+0 and -0 both map to 0). */
static int64_t ordered(float f)
{
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i < 0 ? -(int64_t)(i & 0x7fffffff) : (int64_t)i;
}

static void compare(const ftm_model *ref, const float *init, const float *p,
                    ftm_train_result *res)
{
    const float *r = ftm_model_params((ftm_model *)ref);
    res->bitwise_equal = 1;
    for (int t = 0; t < ftm_model_ntensors(ref); t++) {
        const ftm_tensor_info *ti = ftm_model_tensor(ref, t);
        double moved = 0, worst = 0;
        for (size_t i = 0; i < ti->count; i++) {
            double d = fabs((double)r[ti->offset + i] - init[ti->offset + i]);
            moved = d > moved ? d : moved;
        }
        for (size_t i = 0; i < ti->count; i++) {
            size_t k = ti->offset + i;
            float a = p[k], b = r[k];
            if (!memcmp(&a, &b, sizeof a))
                continue;
            if (res->bitwise_equal) {
                res->bitwise_equal = 0;
                res->diff_tensor = t;
                strncpy(res->diff_name, ti->name, sizeof res->diff_name - 1);
                res->diff_index = i;
                res->diff_val = a;
                res->diff_ref = b;
            }
            res->ndiff++;
            double ad = fabs((double)a - b), mx = fmax(fabs(a), fabs(b));
            double rd = mx > 0 ? ad / mx : 0;
            int64_t u = ordered(a) - ordered(b);
            uint64_t ulp = (uint64_t)(u < 0 ? -u : u);
            if (!(ad <= res->max_abs_diff))
                res->max_abs_diff = ad;
            if (!(rd <= res->max_rel_diff))
                res->max_rel_diff = rd;
            if (ulp > res->max_ulp)
                res->max_ulp = ulp;
            worst = ad > worst || isnan(ad) ? ad : worst;
        }
        double rel = worst == 0 ? 0 : moved > 0 ? worst / moved : INFINITY;
        if (!(rel <= res->max_upd_rel_diff))
            res->max_upd_rel_diff = rel;
    }
}

int train_check(const ftm_train_opts *o, int micro, const float *params,
                const ftm_train_callbacks *cb, ftm_train_result *res)
{
    ftm_model_config mc = o->model;
    mc.max_batch = (int)o->batch;
    mc.micro = micro;
    ftm_optim_config oc = o->optim;
    if (!oc.kind)
        ftm_optim_config_default(&oc, mc.kind);
    ftm_model *m = NULL;
    ftm_optim *opt = NULL;
    float *init = NULL;
    int64_t *gi = NULL;
    int rc = ftm_model_create(&m, &mc);
    size_t np = rc ? 0 : ftm_model_nparams(m);
    if (!rc)
        rc = ftm_optim_create(&opt, &oc, np);
    if (!rc) {
        init = malloc(sizeof(float) * np);
        gi = o->exact ? malloc(sizeof(int64_t) * np) : NULL;
        res->ref_loss = calloc((size_t)o->steps, sizeof(double));
        if (!init || (o->exact && !gi) || !res->ref_loss)
            rc = FTM_ENOMEM;
        else
            memcpy(init, ftm_model_params(m), sizeof(float) * np);
    }
    double t0 = core_now_s();
    for (long s = 0; s < o->steps && !rc; s++) {
        if (o->stop && atomic_load(o->stop)) { /* a signal: the comparison is not run */
            res->interrupted = atomic_load(o->stop);
            break;
        }
        float *g = ftm_model_grads(m);
        memset(g, 0, sizeof(float) * np);
        if (gi)
            memset(gi, 0, sizeof(int64_t) * np);
        ftm_fb_args a = {.step = (uint64_t)s, .first = 0, .count = o->batch,
                         .global_batch = o->batch, .micro = micro, .exact = o->exact,
                         .grads_i64 = gi};
        double loss;
        if ((rc = ftm_model_forward_backward(m, &a, &loss)))
            break;
        if (gi)
            ftm_model_fix_to_float(g, gi, np);
        rc = ftm_optim_step(opt, ftm_model_params(m), g, ftm_model_tensor(m, 0),
                            ftm_model_ntensors(m), (uint64_t)s);
        res->ref_loss[s] = loss;
        if (cb && cb->ref_step)
            cb->ref_step(cb->ctx, s, loss);
    }
    res->ref_wall_s = core_now_s() - t0;
    if (!rc && !res->interrupted) {
        res->checked = 1;
        for (long s = 0; s < o->steps; s++) {
            double d = fabs(res->step[s].loss - res->ref_loss[s]);
            double rel = res->ref_loss[s] != 0 ? d / fabs(res->ref_loss[s]) : d;
            if (!(d <= res->max_loss_diff))
                res->max_loss_diff = d;
            if (!(rel <= res->max_loss_rel_diff))
                res->max_loss_rel_diff = rel;
        }
        compare(m, init, params, res);
        if (o->exact) {
            res->tol = 0;
            res->check_pass = res->bitwise_equal && res->max_loss_diff == 0;
        } else {
            res->tol = o->tol > 0 ? o->tol : FTM_TRAIN_FLOAT_TOL;
            res->check_pass = res->max_grad_rel_diff <= res->tol &&
                              res->max_step_loss_rel_diff <= res->tol;
        }
        res->check_pass = res->check_pass && res->replicas_equal;
    }
    free(init);
    free(gi);
    ftm_optim_destroy(opt);
    ftm_model_destroy(m);
    return rc;
}
