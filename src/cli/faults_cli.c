/* The fault-script options of train and allreduce: --kill WHAT@WHEN
 * (repeatable), --faults FILE, --random-kills K (drawn from --fault-seed), and
 * the short form --fail-during; the one-line refusals; the event log and
 * the JSON "events" list. */
#include "cli.h"
#include "faults_cli.h"
#include "ftmesh/error.h"
#include "ftmesh/rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { ORIGIN_KILL = 1, ORIGIN_FILE, ORIGIN_RANDOM, ORIGIN_SHORT, ORIGIN_REPAIR, ORIGIN_AFTER,
       ORIGIN_CKPT };

int cli_faults_init(cli_faults *f, int argc)
{
    memset(f, 0, sizeof *f);
    f->kill = calloc((size_t)argc + 1, sizeof *f->kill);
    f->repair = calloc((size_t)argc + 1, sizeof *f->repair);
    return f->kill && f->repair ? 0 : CLI_EXIT_FAIL;
}

void cli_faults_free(cli_faults *f)
{
    free(f->kill);
    free(f->repair);
    f->kill = NULL;
    f->repair = NULL;
}

int cli_faults_opt(int id)
{
    return id == CLI_O_KILL || id == CLI_O_FAULTS || id == CLI_O_RANDOM_KILLS ||
           id == CLI_O_REPAIR || id == CLI_O_REPAIR_AFTER;
}

int cli_faults_set(const char *cmd, cli_faults *f, int id, const char *val)
{
    long n;
    switch (id) {
    case CLI_O_KILL:
        f->kill[f->nkill++] = val;
        return 0;
    case CLI_O_FAULTS:
        f->file = val;
        return 0;
    case CLI_O_REPAIR:
        f->repair[f->nrepair++] = val;
        return 0;
    case CLI_O_REPAIR_AFTER:
        if (cli_parse_int(val, 1, FTM_FAULT_MAX_WHEN, &n))
            return cli_usage_error(cmd, "--repair-after %s: expected a whole number 1..%ld", val,
                                   (long)FTM_FAULT_MAX_WHEN);
        f->repair_after = n;
        return 0;
    case CLI_O_RANDOM_KILLS:
        if (cli_parse_int(val, 0, 4095, &n))
            return cli_usage_error(cmd, "--random-kills %s: expected a whole number 0..4095", val);
        f->random = (int)n;
        f->random_given = 1;
        return 0;
    default:
        return cli_usage_error(cmd, "internal: option %d is not a fault option", id);
    }
}

int cli_faults_any(const cli_faults *f)
{
    return f->nkill || f->file || f->random || f->nrepair;
}

int cli_faults_none(const char *cmd, const cli_faults *f)
{
    if (f->repair_after && !(f->pending && f->pending->n) && f->resume)
        cli_warn(cmd, "--repair-after has no effect: no kill is left after the resumed step "
                 "(add --kill WHAT@STEP for a later step)");
    else if (f->repair_after && !(f->pending && f->pending->n))
        cli_warn(cmd, "--repair-after has no effect: nothing dies during the run (add --kill, "
                 "--faults or --random-kills)");
    return 0;
}

/* "--kill V", "--faults F: line N", "--random-kills K", "--fail-during ..." */
static void origin_text(const cli_faults *f, const ftm_fault_event *e, const char *short_name,
                        char *buf, size_t len)
{
    if (e->origin == ORIGIN_KILL)
        snprintf(buf, len, "--kill %s", e->line >= 1 && e->line <= f->nkill ? f->kill[e->line - 1] : "?");
    else if (e->origin == ORIGIN_FILE)
        snprintf(buf, len, "--faults %s: line %d", f->file, e->line);
    else if (e->origin == ORIGIN_RANDOM)
        snprintf(buf, len, "--random-kills %d", f->random);
    else if (e->origin == ORIGIN_REPAIR)
        snprintf(buf, len, "--repair %s", e->line >= 1 && e->line <= f->nrepair ? f->repair[e->line - 1] : "?");
    else if (e->origin == ORIGIN_AFTER)
        snprintf(buf, len, "--repair-after %ld", f->repair_after);
    else if (e->origin == ORIGIN_CKPT)
        snprintf(buf, len, "--resume %s (an event it has still to come)", f->resume);
    else
        snprintf(buf, len, "%s", short_name ? short_name : "?");
}

/* Parses --kill values, --repair values and the file into s. */
static int collect(const char *cmd, const cli_faults *f, ftm_fault_script *s)
{
    char why[256];
    for (int i = 0; i < f->nkill; i++) {
        ftm_fault_event e;
        if (ftm_fault_parse(f->kill[i], s->mode, &e, why, sizeof why))
            return cli_usage_error(cmd, "--kill %s: %s", f->kill[i], why);
        e.origin = ORIGIN_KILL;
        e.line = i + 1;
        if (ftm_fault_script_add(s, &e))
            return cli_usage_error(cmd, "--kill: out of memory");
    }
    for (int i = 0; i < f->nrepair; i++) {
        ftm_fault_event e;
        if (ftm_fault_parse_repair(f->repair[i], s->mode, &e, why, sizeof why))
            return cli_usage_error(cmd, "--repair %s: %s", f->repair[i], why);
        e.origin = ORIGIN_REPAIR;
        e.line = i + 1;
        if (ftm_fault_script_add(s, &e))
            return cli_usage_error(cmd, "--repair: out of memory");
    }
    /* every rank reads the file itself: a pipe or a device reaches one
     * rank (the others would run another script), and opening a FIFO
     * waits for a writer that never comes (a missing file or a directory
     * gets the loader's own reason) */
    struct stat st;
    if (f->file && !strcmp(f->file, "-"))
        return cli_usage_error(cmd, "--faults -: give a file name (/dev/stdin reads standard "
                               "input; ./- a file named -)");
    if (f->file && cli_ranks_count() > 1 && !stat(f->file, &st) && !S_ISREG(st.st_mode) &&
        !S_ISDIR(st.st_mode))
        return cli_usage_error(cmd, "--faults %s: over MPI ranks it must be a regular file every "
                               "rank can read (each rank reads it; a pipe reaches only one)",
                               f->file);
    int n0 = s->n, rc = f->file ? ftm_fault_script_load(s, f->file, ORIGIN_FILE, why, sizeof why) : 0;
    if (rc)
        return cli_usage_error(cmd, "--faults %s: %s", f->file, why);
    if (f->file && s->n == n0)
        cli_warn(cmd, "--faults %s has no events (only blank lines or comments): nothing dies "
                 "from it", f->file);
    return 0;
}

/* Drops the repairs of --repair-after equal to a repair before them (a
 * repair given and also due to --repair-after counts once); kills given
 * twice stay, for the check to refuse. */
static void repairs_once(ftm_fault_script *s)
{
    int k = 0;
    for (int i = 0; i < s->n; i++) {
        int drop = 0;
        for (int j = 0; j < k && !drop && s->ev[i].repair; j++)
            drop = (s->ev[i].origin == ORIGIN_AFTER || s->ev[j].origin == ORIGIN_AFTER) &&
                   s->ev[j].repair && ftm_fault_same(&s->ev[j], &s->ev[i]);
        if (!drop)
            s->ev[k++] = s->ev[i];
    }
    s->n = k;
}

/* --resume: the script the trainer plays (ftm_fault_script_merge, its
 * rule): the checkpoint's pending events, then this run's own, both from
 * the resumed step on, an event of the run's equal to a pending one once. */
static int add_pending(const cli_faults *f, ftm_fault_script *s)
{
    ftm_fault_script p, ck;
    ftm_fault_script_init(&p, s->mode);
    ftm_fault_script_init(&ck, s->mode);
    int rc = 0;
    for (int i = 0; f->pending && i < f->pending->n && !rc; i++) {
        ftm_fault_event e = f->pending->ev[i];
        e.origin = ORIGIN_CKPT;
        e.line = 0;
        rc = ftm_fault_script_add(&ck, &e);
    }
    if (!rc)
        rc = ftm_fault_script_merge(&p, &ck, f->start);
    if (!rc)
        rc = ftm_fault_script_merge(&p, s, f->start);
    ftm_fault_script_free(&ck);
    ftm_fault_script_free(rc ? &p : s);
    if (!rc)
        *s = p;
    return rc;
}

/* 1 when training keeps event e of a script past the run's horizon for a
 * later --resume instead of refusing it: the checkpoint's pending events,
 * --repair-after's repairs, and with a --checkpoint every event given
 * (the command line of a run split in parts can name them all). */
static int kept_past(const cli_faults *f, const ftm_fault_event *e, int mode, long horizon)
{
    return e->when >= horizon && mode == FTM_FAULT_TRAIN &&
           (e->origin == ORIGIN_CKPT || e->origin == ORIGIN_AFTER || f->checkpoint);
}

/* The pre-run check; the events kept_past are checked with no horizon. */
static int check_script(const cli_faults *f, ftm_fault_script *s, const ftm_mesh *m, int mode,
                        long horizon, ftm_fault_verdict *v, char *why, size_t wlen,
                        ftm_fault_event *bad)
{
    ftm_fault_script c;
    ftm_fault_script_init(&c, mode);
    int rc = 0;
    for (int i = 0; i < s->n && !rc; i++) {
        const ftm_fault_event *e = &s->ev[i];
        int kept = kept_past(f, e, mode, horizon);
        if (!kept)
            rc = ftm_fault_script_add(&c, e);
    }
    if (!rc && (rc = ftm_fault_script_check(&c, m, horizon, v, why, wlen)) && v->event >= 0)
        *bad = c.ev[v->event];
    /* the kept ones must be valid too (no horizon) */
    if (!rc && c.n < s->n && (rc = ftm_fault_script_check(s, m, 0, v, why, wlen)) && v->event >= 0)
        *bad = s->ev[v->event];
    ftm_fault_script_free(&c);
    return rc;
}

/* The check's reason without the event's text at its start where `where`
 * shows it as typed ("--kill 9,9@1", not "--kill 9,9@1: 9,9@1: ..."); *glue
 * becomes ' ' where the rest goes on the sentence ("... cuts ..."). */
static const char *past_event(const char *why, const ftm_fault_event *e, int mode,
                              const char *where, int *glue)
{
    char ev[128];
    ftm_fault_format(e, mode, ev, sizeof ev);
    const char *typed = strchr(where, ' '), *bare = strncmp(ev, "repair ", 7) ? ev : ev + 7;
    size_t n = strlen(ev);
    if (!typed || strcmp(typed + 1, bare) || strncmp(why, ev, n) ||
        (why[n] != ':' && why[n] != ' '))
        return why;
    *glue = why[n];
    return why + n + 1 + (why[n] == ':' && why[n + 1] == ' ');
}

/* 1 when s has an event that kills. */
static int any_kill(const ftm_fault_script *s)
{
    for (int i = 0; i < s->n; i++)
        if (!s->ev[i].repair)
            return 1;
    return 0;
}

/* 1 when a repair of s falls within the run's horizon: --repair-after's,
 * a --repair's or, after --resume, one the checkpoint kept pending. */
static int repairs_in_run(const ftm_fault_script *s, long horizon)
{
    for (int i = 0; i < s->n; i++)
        if (s->ev[i].repair && s->ev[i].when < horizon)
            return 1;
    return 0;
}

static const char *unit(int mode);

/* assemble's "the draw's kills cannot all be placed" and refusal's
 * "refused" (quiet: nothing printed); no exit code. */
#define DRAW_UNPLACED (-1)
#define REFUSED (-2)

/* The script of f on m: base (the events given, parsed once), a copy of
 * them; --random-kills drawn from draw (not on --resume: the checkpoint's
 * events still to come hold the first run's draws); the short form, the
 * pending events of --resume, --repair-after's repairs; not checked. 0,
 * DRAW_UNPLACED (quiet), or CLI_EXIT_USAGE / CLI_EXIT_FAIL after printing
 * (s then holds nothing). */
static int assemble(const char *cmd, const cli_faults *f, const ftm_mesh *m, int mode,
                    long horizon, const ftm_fault_script *base, uint64_t draw, int quiet,
                    const ftm_fault_event *short_form, ftm_fault_script *s)
{
    char why[256];
    ftm_fault_script_init(s, mode);
    int rc = 0;
    for (int i = 0; i < base->n && !rc; i++)
        if (ftm_fault_script_add(s, &base->ev[i]))
            rc = cli_error(cmd, "%s", ftm_strerror(FTM_ENOMEM));
    int e = !rc && f->random && !f->resume
                ? ftm_fault_script_random(s, m, f->random, draw, horizon, FTM_FAULT_KINDS_ALL,
                                          f->repair_after, ORIGIN_RANDOM, why, sizeof why)
                : 0;
    if (e)
        rc = e == FTM_ERANGE && quiet ? DRAW_UNPLACED
           : e == FTM_ERANGE          ? cli_usage_error(cmd, "--random-kills %d: %s", f->random, why)
                                      : cli_error(cmd, "--random-kills: %s", ftm_strerror(e));
    if (!rc && short_form) {
        ftm_fault_event ev = *short_form;
        ev.origin = ORIGIN_SHORT;
        if (ftm_fault_script_add(s, &ev))
            rc = cli_error(cmd, "%s", ftm_strerror(FTM_ENOMEM));
    }
    if (!rc && (f->pending || f->start) && add_pending(f, s))
        rc = cli_error(cmd, "%s", ftm_strerror(FTM_ENOMEM));
    if (!rc && f->repair_after) {
        int n0 = s->n;
        /* training keeps the repairs past the run pending (checkpoints) */
        if (ftm_fault_script_repair_after(s, m, f->repair_after,
                                          mode == FTM_FAULT_TRAIN ? 0 : horizon))
            rc = cli_error(cmd, "--repair-after: %s", ftm_strerror(FTM_ENOMEM));
        for (int i = 0; !rc && i < s->n; i++) /* the repairs added (sorted in) */
            if (s->ev[i].order >= n0)
                s->ev[i].origin = ORIGIN_AFTER;
        if (!rc)
            repairs_once(s); /* a repair given and also due to --repair-after */
    }
    if (rc)
        ftm_fault_script_free(s);
    return rc;
}

/* 0 when s passes the pre-run check on m; else, unless quiet, the one
 * line naming where its offending event came from (CLI_EXIT_USAGE; quiet:
 * REFUSED). Out of memory is said either way (CLI_EXIT_FAIL). */
static int refusal(const char *cmd, const cli_faults *f, ftm_fault_script *s,
                   const ftm_mesh *m, int mode, long horizon, const char *short_name, int quiet)
{
    char why[320], where[300];
    ftm_fault_verdict v;
    ftm_fault_event bad = { .origin = 0 };
    int rc = check_script(f, s, m, mode, horizon, &v, why, sizeof why, &bad);
    if (!rc)
        return 0;
    if (rc == FTM_ENOMEM)
        return cli_error(cmd, "%s", ftm_strerror(rc));
    if (quiet)
        return REFUSED;
    /* past the run, in training: a --checkpoint would keep it, if nothing
     * else is wrong with the script; else that is what to say */
    int past = bad.when >= horizon && mode == FTM_FAULT_TRAIN && !f->checkpoint;
    char why0[320];
    ftm_fault_verdict v0;
    ftm_fault_event bad0 = bad;
    if (past && check_script(f, s, m, mode, 0, &v0, why0, sizeof why0, &bad0)) {
        past = 0; /* wrong in itself: say that */
        v = v0;
        bad = bad0;
        memcpy(why, why0, sizeof why);
    }
    origin_text(f, &bad, short_name, where, sizeof where);
    int glue = ':';
    const char *rest = past_event(why, &bad, mode, where, &glue);
    return cli_usage_error(cmd, "%s%s %s; %s", where, glue == ':' ? ":" : "", rest,
                           v.a >= 0 ? "drop it or keep a path of live links between them"
                           : past ? "drop or change that event (a --checkpoint would keep it, "
                                    "for --resume)"
                                  : "drop or change that event");
}

/* The seed --random-kills are drawn from. A draw keeps the healthy chips
 * connected by itself, where its kills (at the times it drew) can all be
 * placed; beside the events given it may kill what they kill or cut the
 * mesh with them (or with --repair-after's repairs). Either way the next
 * draw of a sequence from the seed that fits is taken. Events given that
 * are refused alone are refused as such (not blamed on a draw). */
#define DRAW_TRIES 64
#define DRAW_TAG 0x6472617773ULL /* "draws" */
static int pick_draw(const char *cmd, const cli_faults *f, const ftm_mesh *m, int mode,
                     long horizon, const ftm_fault_script *base, uint64_t seed,
                     const ftm_fault_event *short_form, const char *short_name, uint64_t *draw)
{
    cli_faults g = *f;
    ftm_fault_script t;
    g.random = 0;
    *draw = seed;
    int rc = assemble(cmd, &g, m, mode, horizon, base, seed, 0, short_form, &t);
    int placed = 0, given = !rc ? t.n : 0;
    if (!rc) {
        rc = refusal(cmd, &g, &t, m, mode, horizon, short_name, 0);
        ftm_fault_script_free(&t);
    }
    for (int a = 0; !rc && a < DRAW_TRIES; a++) {
        uint64_t sd = a ? ftm_rng_u64(seed, DRAW_TAG, (uint64_t)a, 0, 0) : seed;
        rc = assemble(cmd, f, m, mode, horizon, base, sd, 1, short_form, &t);
        if (rc == DRAW_UNPLACED) {
            rc = 0; /* the next draw */
            continue;
        }
        if (rc)
            return rc;
        placed = 1;
        rc = refusal(cmd, f, &t, m, mode, horizon, short_name, 1);
        ftm_fault_script_free(&t);
        if (rc == 0)
            *draw = sd;
        if (rc != REFUSED)
            return rc;
        rc = 0;
    }
    if (rc)
        return rc;
    if (!placed) { /* the first draw's refusal says why */
        if ((rc = assemble(cmd, f, m, mode, horizon, base, seed, 0, short_form, &t)) == 0)
            ftm_fault_script_free(&t); /* cannot happen: it failed quietly before */
        return rc;
    }
    return cli_usage_error(cmd, "--random-kills %d: none of %d draws fits%s; ask for fewer kills "
                           "or another --fault-seed", f->random, DRAW_TRIES,
                           given ? " beside the other events (each kills what they kill or cuts "
                                   "the healthy chips apart with them)" : "");
}

/* --resume: the events given for steps before the resumed one are not
 * played (ftm_fault_script_merge), each said: the checkpoint's mesh holds
 * what the first run did (it cannot tell which events those were), and
 * where the run does not take that mesh (another shape, or none recorded)
 * nothing holds them. */
static void warn_history(const char *cmd, const cli_faults *f, const ftm_fault_script *s)
{
    char where[300];
    for (int i = 0; i < s->n; i++)
        if (s->ev[i].when < f->start) {
            origin_text(f, &s->ev[i], NULL, where, sizeof where);
            if (f->history_kept)
                cli_warn(cmd, "%s: before step %ld, where the run resumes: not played again "
                         "(the checkpoint's mesh holds what the first run did)", where,
                         f->start);
            else
                cli_warn(cmd, "%s: before step %ld, where the run resumes, and the "
                         "checkpoint's mesh is not taken: not played (give what it takes as "
                         "--fail options)", where, f->start);
        }
}

int cli_faults_build(const char *cmd, const cli_faults *f, const ftm_mesh *m, int mode,
                     long horizon, uint64_t seed, const ftm_fault_event *short_form,
                     const char *short_name, ftm_fault_script *s)
{
    ftm_fault_script base;
    ftm_fault_script_init(&base, mode);
    uint64_t draw = seed;
    int rc = collect(cmd, f, &base); /* once: a --faults pipe reads once */
    if (!rc && f->resume)
        warn_history(cmd, f, &base);
    if (!rc && f->random && f->resume && f->history_kept)
        cli_warn(cmd, "--random-kills with --resume draws nothing: the checkpoint's events "
                 "still to come hold the first run's draws");
    else if (!rc && f->random && f->resume)
        cli_warn(cmd, "--random-kills with --resume draws nothing: draws span a run from its "
                 "step 0, and the checkpoint's mesh is not taken; give the kills as --kill "
                 "WHAT@STEP");
    else if (!rc && f->random)
        rc = pick_draw(cmd, f, m, mode, horizon, &base, seed, short_form, short_name, &draw);
    if (!rc)
        rc = assemble(cmd, f, m, mode, horizon, &base, draw, 0, short_form, s);
    ftm_fault_script_free(&base);
    if (rc)
        return rc;
    if (!any_kill(s))
        cli_faults_none(cmd, f);
    else if (f->repair_after && !repairs_in_run(s, horizon))
        cli_warn(cmd, "--repair-after %ld: nothing comes back within the run (%ld %ss)%s", f->repair_after,
                 horizon, unit(mode), mode != FTM_FAULT_TRAIN ? ""
                 : f->checkpoint ? "; the --checkpoint keeps the repairs, for --resume"
                                 : ": only a --checkpoint keeps the repairs, for --resume");
    if ((rc = refusal(cmd, f, s, m, mode, horizon, short_name, 0)))
        ftm_fault_script_free(s);
    for (int i = 0; !rc && i < s->n; i++) /* given ones only: the others are kept anyway */
        if (kept_past(f, &s->ev[i], mode, horizon) && s->ev[i].origin != ORIGIN_CKPT &&
            s->ev[i].origin != ORIGIN_AFTER) {
            cli_warn(cmd, "events at step %ld or later fall past the run (%ld steps): the "
                     "--checkpoint keeps them, for --resume", horizon, horizon);
            break;
        }
    return rc;
}

static const char *unit(int mode)
{
    return mode == FTM_FAULT_TRAIN ? "step" : "iteration";
}

/* What the modeled times of a record measure: train's rings carry the
 * gradients (the table's modeled_ar adds the batch-norm sums). */
static const char *modeled_what(int mode)
{
    return mode == FTM_FAULT_TRAIN ? "gradient allreduce" : "allreduce";
}

static void print_repair(FILE *out, const ftm_fault_record *e, int mode)
{
    if (!e->noticed) { /* its kill never struck */
        fprintf(out, "# %s %ld: repair of %s %s\n", unit(mode), e->when, e->what, e->detected_by);
        return;
    }
    char state[160] = "";
    if (e->from[0])
        snprintf(state, sizeof state, "; state from %s: %llu bytes, %.3g us modeled", e->from,
                 (unsigned long long)e->state_bytes, e->lost_modeled_s * 1e6);
    else if (mode == FTM_FAULT_TRAIN && e->event.kind != FTM_FAULT_LINK && e->noticed)
        snprintf(state, sizeof state, "; its state came with the recovery"); /* its own failed */
    else if (mode != FTM_FAULT_TRAIN && (e->lost_wall_s > 0 || e->lost_modeled_s > 0))
        /* allreduce: the run starts over (the first repair of an instant counts it) */
        snprintf(state, sizeof state, "; lost %.3g s wall, %.3g s modeled (%s %ld run%s "
                 "again)", e->lost_wall_s, e->lost_modeled_s,
                 e->when > 1 ? "iterations 0 to" : "iteration", e->when - 1, e->when > 1 ? "" : "s");
    fprintf(out, "# %s %ld: %s repaired%s; %d chip%s; %s modeled %.3g -> %.3g s\n",
            unit(mode), e->when, e->what, state, e->chips_after, cli_s(e->chips_after),
            modeled_what(mode), e->modeled_before_s, e->modeled_after_s);
}

/* Train: where a recovery or repair changed the gradient schedule, the
 * one that runs from there (allreduce tells its runs' schedules itself). */
static void print_schedule(FILE *out, const ftm_fault_record *e, int mode)
{
    const char *b = e->schedule_before, *a = e->schedule_after;
    if (mode != FTM_FAULT_TRAIN || !a || (b && !strcmp(a, b)))
        return;
    if (e->fallback_after && e->algo_after && strcmp(e->algo_after, a))
        fprintf(out, "#   gradient allreduce from here: the %s schedule (%s's fallback: %s)\n",
                a, e->algo_after, e->fallback_after);
    else
        fprintf(out, "#   gradient allreduce from here: the %s schedule\n", a);
}

void cli_faults_print(FILE *out, const ftm_fault_record *e, int mode)
{
    if (e->repair) {
        print_repair(out, e, mode);
        if (e->noticed)
            print_schedule(out, e, mode);
        return;
    }
    if (!e->noticed) { /* skipped (detected_by says why), or a link nobody needed */
        if (e->detected_by[0])
            fprintf(out, "# %s %ld (%s): %s: %s\n", unit(mode), e->when,
                    ftm_fault_phase_name(e->phase), e->what, e->detected_by);
        else
            fprintf(out, "# %s %ld (%s): %s died; nothing needed it again, nobody noticed\n",
                    unit(mode), e->when, ftm_fault_phase_name(e->phase), e->what);
        return;
    }
    double q = e->modeled_before_s > 0 ? e->modeled_after_s / e->modeled_before_s : 0;
    char again[64]; /* train resumes at a step; allreduce runs every iteration again */
    if (mode == FTM_FAULT_TRAIN)
        snprintf(again, sizeof again, "step %ld redone", e->resumed);
    else
        snprintf(again, sizeof again, "the run starts over from iteration %ld", e->resumed);
    fprintf(out, "# %s %ld (%s): %s died; noticed by %s; lost %.3g s wall, %.3g s modeled; "
            "%d chip%s left, %s; %s modeled %.3g -> %.3g s (x%.3f)\n",
            unit(mode), e->when, ftm_fault_phase_name(e->phase), e->what, e->detected_by,
            e->lost_wall_s, e->lost_modeled_s, e->chips_after, cli_s(e->chips_after), again,
            modeled_what(mode), e->modeled_before_s, e->modeled_after_s, q);
    print_schedule(out, e, mode);
}

void cli_faults_json(cli_json *j, const ftm_fault_record *ev, int n)
{
    cli_json_begin_arr(j, "events");
    for (int i = 0; i < n; i++) {
        const ftm_fault_record *e = &ev[i];
        cli_json_begin_obj(j, NULL);
        cli_json_str(j, "kind", e->repair ? "repair" : "kill");
        cli_json_int(j, "step", e->when);
        cli_json_str(j, "phase", ftm_fault_phase_name(e->phase));
        cli_json_str(j, "what", e->what);
        cli_json_str(j, "detected_by", e->detected_by[0] ? e->detected_by : NULL);
        cli_json_str(j, "state_from", e->from[0] ? e->from : NULL);
        cli_json_int(j, "state_bytes", (long)e->state_bytes);
        cli_json_num(j, "lost_wall_s", "%.6g", e->noticed ? e->lost_wall_s : 0);
        cli_json_num(j, "lost_modeled_s", "%.6g", e->noticed ? e->lost_modeled_s : 0);
        if (e->noticed)
            cli_json_int(j, "chips_after", e->chips_after);
        else
            cli_json_null(j, "chips_after");
        cli_json_bool(j, "noticed", e->noticed);
        cli_json_int(j, "resumed_step", e->resumed);
        cli_json_num(j, "modeled_before_s", "%.6g", e->modeled_before_s);
        cli_json_num(j, "modeled_after_s", "%.6g", e->modeled_after_s);
        cli_json_str(j, "algo_after", e->algo_after);
        cli_json_str(j, "schedule_after", e->schedule_after);
        cli_json_str(j, "fallback_after", e->fallback_after);
        cli_json_end(j);
    }
    cli_json_end(j);
}
