/* ftmesh train's options: the table its parser reads and its --help. */
#include "cli.h"
#include "faults_cli.h"
#include "train_report.h"
#include "ftmesh/collective.h"
#include "ftmesh/train.h"
#include "trace_json.h"

#include <stdio.h>


static const cli_opt train_table[] = {
    { "model", "resnet|bert", O_MODEL, "the model (default resnet)" },
    { "steps", "N", O_STEPS, "training steps (default 10)" },
    { "batch", "B", O_BATCH, "global batch, the same whatever the faults (default 32);\n"
      "a resnet replica holds its chip's share (about 1 MiB an\nexample): a batch that would "
      "not fit in memory is refused" },
    { "seed", "S", CLI_O_SEED,
      "model initialisation, data, dropout, masking and\n--random-faults (default 1)" },
    { "algo", "NAME", O_ALGO,
      "gradient allreduce (default ring; see Algorithms\n"
      "below); auto = the registered algorithm with the\n"
      "smallest modeled time" },
    { "bn-algo", "NAME", O_BN_ALGO,
      "batch-norm statistics allreduce (ResNet; 2 x 9..21 small\n"
      "int64 sums per step): tree (default: few steps and\n"
      "messages) or any other --algo name" },
    { "reduce", "float|exact", O_REDUCE,
      "float: float32 gradient sums, equal to one chip up to\n"
      "rounding; exact: per-micro-batch gradients in int64\n"
      "fixed point (2^-" CLI_STR(FTM_FIX_SHIFT) "), parameters bit-identical to one\n"
      "chip on any mesh, faults and algorithm (default float)" },
    { "micro", "M", O_MICRO,
      "micro-batch size (default 4). Exact mode splits the\n"
      "batch over the chips in whole micro-batches, so use\n"
      "M <= B / chips to keep every chip busy; float mode may\n"
      "use a divisor of M so micro-batches align with shares" },
    { "check", NULL, O_CHECK,
      "also train on one chip and compare: loss per step, final\n"
      "params max abs/rel diff, max ULPs, first differing\n"
      "element. Exact mode demands bitwise equal params.\n"
      "Float runs drift apart step after step (rounding,\n"
      "amplified by training), so float mode is judged per\n"
      "step: the lowest chip also computes the one-chip\n"
      "gradient at the mesh's parameters (slower steps), and\n"
      "every tensor's max |diff| / max |grad| and the loss\n"
      "must stay within " CLI_STR(FTM_TRAIN_FLOAT_TOL) " (float32 reordering bound, see\n"
      "src/train/check.c); the drift is reported" },
    { "tol", "X", O_TOL,
      "float-mode --check bound instead of " CLI_STR(FTM_TRAIN_FLOAT_TOL) "\n"
      "(no effect without --check or with --reduce exact)" },
    { "depth", "8|14|20", O_DEPTH, "ResNet depth (default 8)" },
    { "heads", "H", O_HEADS, "BERT attention heads, 2 or 4 (default 2)" },
    { "lr", "X", O_LR, "peak learning rate (default: resnet SGD 0.1, bert\nLAMB 1e-2)" },
    { "data", "DIR", O_DATA,
      "ResNet: CIFAR-10 binary batches DIR/data_batch_1.bin\n"
      "(required) .. data_batch_5.bin (default: synthetic\nimages, no download)" },
    { "corpus", "FILE", O_CORPUS,
      "BERT: plain-text corpus: a file, a pipe or - (stdin),\n"
      "read once, at most " CLI_STR(FTM_DATA_CORPUS_MAX_MIB) " MiB (default: synthetic\n"
      "sequences)" },
    { "fail-during", "R,C", O_FAIL_DURING,
      "chip (R,C) dies in the middle of the gradient\n"
      "allreduce of step --fail-step (default 1); training\n"
      "recovers as for --kill" },
    { "fail-step", "S", O_FAIL_STEP,
      "the step in which --fail-during strikes (the short form\n"
      "of --kill R,C@S:allreduce)" },
    CLI_OPTS_FAULTS("STEP", "WHEN: STEP (its start), STEP:PHASE with\n"
                    "PHASE forward, backward, allreduce or optimizer, or\n"
                    "STEP:allreduce:N (once the victim sent N packets of the\n"
                    "gradient allreduce). Survivors agree on what died and\n"
                    "on the first step not reported, rebuild the rings and\n"
                    "redo that step"),
    CLI_OPTS_REPAIRS("step", "STEP"),
    { "checkpoint", "FILE", O_CHECKPOINT,
      "write the training state to FILE (atomically) at the end\n"
      "and every --checkpoint-every steps; it keeps the fault\n"
      "events past --steps, for --resume" },
    { "checkpoint-every", "N", O_CHECKPOINT_EVERY, "with --checkpoint: every N steps too" },
    { "resume", "FILE", O_RESUME,
      "continue from a --checkpoint FILE of the same model,\n"
      "sizes, optimizer, batch, micro-batch, seed, data and\n"
      "reduce mode up to --steps" },
    CLI_OPT_TRACE(O_TRACE, O_TRACE_CLOCK),
    { "trace-steps", "N", O_TRACE_STEPS,
      "with --trace: record the first N steps run (default\n"
      "every step; a step takes about 0.1 MB of trace on 2x2,\n"
      "0.8 MB on 4x4, 7 MB on 8x8 with the default model)" },
    { "svg", "FILE", O_SVG,
      "write a picture: the mesh, one gradient allreduce's\n"
      "bytes per link, and the loss per step with the fault\nevents" },
    { "json", NULL, CLI_O_JSON, "one JSON object per step, then a summary object" },
    CLI_OPT_HANG_TIMEOUT,
    CLI_OPT_RANKS,
    { NULL, NULL, 0, NULL },
};
const cli_opt *const train_tables[] = { train_table, cli_mesh_table, NULL };

void train_usage(void)
{
    printf("usage: ftmesh train [--model resnet|bert] [--mesh RxC] [--torus] [faults]\n"
           "                    [--algo NAME] [--steps N] [--batch B] [--seed S]\n"
           "                    [--reduce float|exact] [--micro M] [--check] [--json]\n"
           "                    [--depth 8|14|20] [--heads H] [--lr X] [--data DIR]\n"
           "                    [--corpus FILE]\n"
           "                    [--fail-during R,C [--fail-step S]] [--svg FILE]\n"
           "\n"
           "Trains on every healthy chip of the mesh. The global batch B is split over\n"
           "the healthy chips by example index (unequal shares when B does not divide);\n"
           "each chip runs forward and backward on its share with its own replica,\n"
           "the gradients are summed through the links by the allreduce algorithm, and\n"
           "every chip applies the same optimizer step. Batch norm (ResNet) sums its\n"
           "statistics over the chips too. --mesh 1x1 trains on one chip.\n"
           "\n"
           "Prints per step: loss, wall time, modeled allreduce time (TPU-v3 links:\n"
           "gradient schedule plus batch-norm schedules) and examples/s; a progress bar\n"
           "when stdout is a terminal; then a summary. Exit 0 ok, 1 failed (training\n"
           "error or divergence, replicas differ, or --check out of bounds), 2 bad\n"
           "input, 3 hang, 129, 130 or 143 stopped by SIGHUP, SIGINT or SIGTERM (the\n"
           "step finishes, the checkpoint is written; a second signal 0.25 s or more\n"
           "later stops at once, without them; SIGHUP ignored, as under nohup, stays\n"
           "ignored), 141 stdout's reader stopped early (| head; the run still ends\n"
           "and writes its checkpoint).\n"
           "\n");
    cli_print_opts(stdout, "Options", train_tables, 0, 1);
    cli_print_algos(stdout, "--algo, --bn-algo");
    cli_print_opts(stdout, "Mesh and faults", train_tables, 1, 2);
}
