/* ftmesh train's output: per-step lines, the progress bar, the summary,
 * and the /proc/stat sampling behind its load-free figure. */
#ifndef FTMESH_CLI_TRAIN_REPORT_H
#define FTMESH_CLI_TRAIN_REPORT_H

#include "cli.h"
#include "ftmesh/train.h"

/* train's options (train_opts.c): their ids, the parser's tables and
 * --help. */
enum { O_MODEL = CLI_O_CMD, O_STEPS, O_BATCH, O_ALGO, O_BN_ALGO, O_REDUCE, O_MICRO, O_CHECK,
       O_TOL, O_DEPTH, O_HEADS, O_LR, O_DATA, O_CORPUS, O_FAIL_DURING, O_FAIL_STEP,
       O_TRACE, O_TRACE_CLOCK, O_CHECKPOINT, O_CHECKPOINT_EVERY, O_RESUME, O_SVG,
       O_TRACE_STEPS };
extern const cli_opt *const train_tables[];
void train_usage(void);

typedef struct train_out {
    int json, tty;
    long steps, batch;
    int bar;          /* a progress bar line is on screen */
    /* other processes' CPU during steps >= 1 (the machine is shared) */
    int have_stat;
    double busy0, own0, others_s;
} train_out;

/* What the summary needs beyond the result. */
typedef struct train_summary_info {
    const char *model;   /* "resnet", "bert" */
    int bn;              /* the model has batch norm */
    int exact;
    long diverged_step;  /* -1, or the step whose loss was not finite */
    const cli_mesh_opts *o; /* the mesh options: the JSON "faults" record */
    const char *asked;   /* --algo as given ("auto" names its pick too) */
    const char *bn_asked; /* --bn-algo as given */
    const char *ckpt;     /* --checkpoint as given, or NULL */
    int micro;            /* --micro as given */
    const char *data;    /* --data's directory or --corpus's file; NULL:
                          * synthetic examples */
    int check;           /* --check was given (it may not have run) */
} train_summary_info;

void train_out_init(train_out *c, int json, long steps, long batch);
/* ftm_train_callbacks members (ctx is a train_out). */
void train_on_step(void *ctx, const ftm_train_step *s);
void train_on_ref(void *ctx, long step, double loss);
void train_clear_bar(train_out *c);
/* The summary: one JSON object, or the text report. */
void train_summary(const ftm_train_result *r, const ftm_mesh *m, const train_summary_info *in,
                   const train_out *c);

/* Why training diverged: the loss not finite, or (exact mode) a gradient
 * past the fixed-point range. */
const char *train_diverged_why(const ftm_train_result *r);

/* The header's note on chips the batch split leaves idle (float mode
 * deals examples, exact mode whole micro-batches), and what would keep
 * them busy; nothing when every chip gets work. */
void train_idle_note(const ftm_train_opts *t, int P, int json);
/* --resume of a checkpoint at step at, which holds every step of --steps:
 * the line (or --json object) that says so; files: some output file
 * (--checkpoint, --svg, --trace) is not written. */
void train_nothing_to_do(int json, const char *resume, long at, long steps, int files);
/* "# data: --data DIR, N images" (or --corpus FILE, N tokens): what the
 * run reads; nothing for synthetic examples. */
void train_data_note(const char *data, const char *corpus, const ftm_dataset *ds, long batch);

#endif
