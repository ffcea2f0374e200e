/* Shared by the training test programs: models shrunk to milliseconds a
 * step (a 4-channel ResNet on 8x8 images; a BERT of hidden 16, 8 tokens
 * and a 60-word vocabulary), 12 examples in micro-batches of 2. */
#ifndef FTMESH_TEST_TRAIN_UTIL_H
#define FTMESH_TEST_TRAIN_UTIL_H

#include "ftmesh/train.h"

static inline void test_tiny_opts(ftm_train_opts *o, int kind, long steps)
{
    ftm_train_opts_default(o, kind);
    if (kind == FTM_MODEL_RESNET) {
        o->model.width = 4;
        o->model.image = 8;
    } else {
        o->model.hidden = 16;
        o->model.seq = 8;
        o->model.vocab = 60;
    }
    o->model.seed = 7;
    o->steps = steps;
    o->batch = 12;
    o->micro = 2;
    o->hang_timeout_s = 20;
}

#endif
