/* Output files written whole or not at all, and the signals that stop a
 * run.
 *
 * Every file a command writes goes to a temporary file beside it (the
 * same directory, so rename(2) replaces the old file in one step) and is
 * renamed over the asked path only once it is complete (over the file a
 * symbolic link there names, so the link stays). A pipe or a device
 * (/dev/null, /dev/stdout) cannot be replaced: it is written in place,
 * and so is the file the run's stdout or stderr is redirected to
 * (through that stream).
 * Two output options of one run never name the same file. A refused run,
 * a failed one and one stopped by SIGINT, SIGTERM or SIGHUP leave the old
 * file as it was (or none): the handler removes the temporary files
 * (unlink is async-signal-safe) before the signal ends the process.
 * Commands that stop gracefully (train) hand the handler a flag instead.
 */
#define _XOPEN_SOURCE 700 /* realpath, strndup */
#include "cli.h"
#include "ftmesh/file.h"
#include "ftmesh/error.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The temporary files open now: the handler reads them, so a slot's path
 * is set before it is marked used and unmarked before it is freed. */
#define OUT_SLOTS 8
static char *out_tmp[OUT_SLOTS];
static volatile sig_atomic_t out_used[OUT_SLOTS];
static atomic_int *volatile out_flag; /* graceful: set to the signal */
/* a lock-free atomic is what a handler may store to while threads read */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "atomic_int must be lock-free");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "atomic long long must be lock-free");
static int out_installed;

static const int out_sigs[] = { SIGINT, SIGTERM, SIGHUP };

/* Graceful: the first signal asks the run to stop after its step; a
 * second one at least a quarter second later (a run stuck in a long
 * step) stops it at once, as when not graceful. Sooner it is the same
 * stop told twice: timeout(1) signals its child, then its whole process
 * group. clock_gettime is async-signal-safe. */
static _Atomic long long out_first_ns; /* when the first came (0: not yet) */

static void on_signal(int sig)
{
    atomic_int *flag = out_flag;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long ns = (long long)now.tv_sec * 1000000000LL + now.tv_nsec, first;
    int none = 0;
    if (flag && atomic_compare_exchange_strong(flag, &none, sig)) {
        atomic_store(&out_first_ns, ns);
        return;
    }
    first = atomic_load(&out_first_ns);
    if (flag && (first == 0 || ns - first < 250000000LL))
        return;
    if (flag) { /* the run stops without its summary: say why (write(2) is signal-safe) */
        static const char msg[] = "ftmesh: stopped at once by a second signal: the step did not "
                                  "finish and wrote nothing; an earlier checkpoint stays\n";
        ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)w;
    }
    for (int i = 0; i < OUT_SLOTS; i++)
        if (out_used[i])
            unlink(out_tmp[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Installs the handler for every signal of out_sigs. A signal ignored by
 * whoever started us (nohup, a background job of a script) stays ignored,
 * but for SIGINT where the command stops gracefully: a script's background
 * train (SIGINT ignored there) stops after its step and keeps its
 * checkpoint when sent SIGINT. SIGHUP under nohup stays ignored. */
static void install(int graceful)
{
    static int ignored[3], known;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) {
        if (!known && sigaction(out_sigs[i], NULL, &old) == 0)
            ignored[i] = old.sa_handler == SIG_IGN;
        int keep = ignored[i] && !(graceful && out_sigs[i] == SIGINT);
        sa.sa_handler = keep ? SIG_IGN : on_signal;
        sigaction(out_sigs[i], &sa, NULL);
    }
    known = 1;
}

void cli_signals_graceful(atomic_int *flag)
{
    out_flag = flag;
    install(flag != NULL);
    out_installed = 1;
}

int cli_signal_exit(int sig) { return 128 + sig; }

/* The file path names: itself, or what its symbolic links lead to (the
 * directory resolved where the file does not exist yet); NULL on no memory. */
static char *real_path_at(const char *path, int depth)
{
    char *r = realpath(path, NULL), link[4096];
    if (r)
        return r;
    ssize_t n = depth < 40 ? readlink(path, link, sizeof link - 1) : -1; /* 40: Linux's own limit */
    const char *slash = strrchr(path, '/');
    if (n > 0) { /* a link to a file not made yet: follow it */
        link[n] = 0;
        int rel = link[0] != '/' && slash;
        char *t = malloc((rel ? (size_t)(slash - path) + 1 : 0) + (size_t)n + 1);
        if (!t)
            return NULL;
        sprintf(t, "%.*s%s", rel ? (int)(slash - path + 1) : 0, path, link);
        r = real_path_at(t, depth + 1);
        free(t);
        return r;
    }
    const char *base = slash ? slash + 1 : path;
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    char *rd = dir ? realpath(dir, NULL) : NULL;
    free(dir);
    if (!rd)
        return strdup(path);
    r = malloc(strlen(rd) + strlen(base) + 2);
    if (r)
        sprintf(r, "%s/%s", rd, base);
    free(rd);
    return r;
}

static char *real_path(const char *path) { return real_path_at(path, 0); }

/* The files this run's output options write, so that two of them never
 * name the same one (the later would silently replace the other), and
 * the files its input options read (in: 1), which no output may replace. */
#define OUT_CLAIMS 16
static struct { const char *opt; char *file; int in; } out_claims[OUT_CLAIMS];

/* Why opt (in: an input) may not have a file another option a holds
 * (a_in: a reads it); NULL where it may. A checkpoint may replace the
 * one its run resumed from (the run goes on from it). */
static const char *clash(const char *opt, int in, const char *a, int a_in)
{
    if (in && a_in)
        return NULL; /* two inputs read one file */
    if (!in && !a_in)
        return strcmp(a, opt) ? "writes that file too" : NULL;
    const char *out = in ? a : opt, *inp = in ? opt : a;
    if (!strcmp(out, "--checkpoint") && !strcmp(inp, "--resume"))
        return NULL;
    return a_in ? "reads that file" : "writes that file";
}

/* Claims file for opt; 0, or CLI_EXIT_USAGE where another option has it. */
static int claim(const char *cmd, const char *opt, const char *path, char *file, int in)
{
    int i = 0, again = 0;
    for (; i < OUT_CLAIMS && out_claims[i].file; i++) { /* every option that has it */
        if (strcmp(out_claims[i].file, file))
            continue;
        const char *why = clash(opt, in, out_claims[i].opt, out_claims[i].in);
        if (why) {
            free(file);
            return cli_usage_error(cmd, "%s %s: %s %s: give each output its own file", opt,
                                   path, out_claims[i].opt, why);
        }
        again |= !strcmp(out_claims[i].opt, opt);
    }
    if (!again && i < OUT_CLAIMS) {
        out_claims[i].opt = opt;
        out_claims[i].file = file;
        out_claims[i].in = in;
    } else {
        free(file);
    }
    return 0;
}

int cli_in_claim(const char *cmd, const char *opt, const char *path)
{
    struct stat st;
    if (!path || stat(path, &st) || !S_ISREG(st.st_mode)) /* a pipe is read, not replaced */
        return 0;
    char *file = real_path(path);
    if (!file)
        return cli_error(cmd, "%s %s: %s", opt, path, ftm_strerror(FTM_ENOMEM));
    return claim(cmd, opt, path, file, 1);
}

/* 1 or 2 when path is the regular file this run's standard output or
 * error is redirected to (/dev/stdout, or the file's name): written
 * through that stream, in its order and at its place (a temporary file
 * renamed over it would wipe what the stream wrote and will write);
 * else 0 (a terminal, a pipe or /dev/null is a device: special_file). */
static int std_stream(const char *path)
{
    struct stat st, sf;
    if (stat(path, &st) || !S_ISREG(st.st_mode))
        return 0;
    for (int fd = 1; fd <= 2; fd++)
        if (!fstat(fd, &sf) && sf.st_dev == st.st_dev && sf.st_ino == st.st_ino)
            return fd;
    return 0;
}

static int stdout_json;

void cli_out_stdout_json(int on) { stdout_json = on; }

/* 1 when path is standard output as a file, pipe or socket (what a
 * program reads), not a terminal or /dev/null. */
static int stdout_data(const char *path)
{
    struct stat st, so;
    return !stat(path, &st) && !fstat(1, &so) && st.st_dev == so.st_dev &&
           st.st_ino == so.st_ino &&
           (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

/* 1 when path is a pipe, socket or device: written in place. */
static int special_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

int cli_out_check(const char *cmd, const char *opt, const char *path)
{
    struct stat st;
    if (!path[0])
        return cli_usage_error(cmd, "%s: the file name is empty", opt);
    if (!strcmp(path, "-")) /* "-" is no option's standard output; a checkpoint
                               * is a regular file (--resume reads it back) */
        return cli_usage_error(cmd, "%s -: give a file name (./- for a file named -%s)", opt,
                               strcmp(opt, "--checkpoint") ? ", /dev/stdout for standard output" : "");
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return cli_usage_error(cmd, "%s %s: is a directory: give a file name", opt, path);
    if (stdout_json && stdout_data(path))
        return cli_usage_error(cmd, "%s %s: is standard output, which carries --json's output: "
                               "give another file name", opt, path);
    if (special_file(path)) /* /dev/null may take every output */
        return 0;
    char *file = real_path(path);
    if (!file)
        return cli_error(cmd, "%s %s: %s", opt, path, ftm_strerror(FTM_ENOMEM));
    int rc = claim(cmd, opt, path, file, 0);
    if (rc || std_stream(path)) /* the stream's file: one output option at most */
        return rc;
    char *t, *dest = real_path(path); /* where a link leads: the file written */
    struct stat ls;
    int fd = ftm_file_tmp_open(dest ? dest : path, &t), e = errno;
    int link = dest && lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode);
    if (fd >= 0) {
        close(fd);
        unlink(t);
    }
    free(t);
    if (fd < 0 && e == ENOMEM)
        rc = cli_error(cmd, "%s %s: %s", opt, path, ftm_strerror(FTM_ENOMEM));
    else if (fd < 0)
        rc = cli_usage_error(cmd, "%s %s: cannot create a file there%s%s%s: %s", opt, path,
                             link ? " (the link leads to " : "", link ? dest : "",
                             link ? ")" : "", strerror(e));
    free(dest);
    return rc;
}

int cli_out_file(const char *cmd, const char *opt, const char *path, char **file)
{
    *file = NULL;
    int fd = strcmp(path, "-") ? std_stream(path) : 0;
    if (fd) /* the rename would wipe the stream's file */
        return cli_usage_error(cmd, "%s %s: is this run's standard %s: give another file name",
                               opt, path, fd == 1 ? "output" : "error");
    if (strcmp(path, "-") && special_file(path)) /* the rename would replace /dev/null */
        return cli_usage_error(cmd, "%s %s: not a regular file: give a file name", opt, path);
    int rc = cli_out_check(cmd, opt, path);
    if (!rc && !(*file = real_path(path)))
        rc = cli_error(cmd, "%s %s: %s", opt, path, ftm_strerror(FTM_ENOMEM));
    return rc;
}

/* A pipe or device: opened in place (no temporary file can replace it);
 * standard output or error: written through its stream. */
static int open_direct(const char *cmd, cli_out *o)
{
    int fd = std_stream(o->path);
    o->direct = fd ? 2 : 1;
    if (fd) {
        o->f = fd == 1 ? stdout : stderr;
        return 0;
    }
    if (!(o->f = fopen(o->path, "w")))
        return cli_usage_error(cmd, "%s %s: cannot write there: %s", o->opt, o->path,
                               strerror(errno));
    return 0;
}

int cli_out_open(const char *cmd, cli_out *o, const char *opt, const char *path)
{
    memset(o, 0, sizeof *o);
    o->opt = opt;
    o->path = path;
    o->slot = -1;
    int rc = cli_out_check(cmd, opt, path);
    if (rc)
        return rc;
    if (special_file(path) || std_stream(path))
        return open_direct(cmd, o);
    if (!(o->dest = real_path(path)))
        return cli_error(cmd, "%s %s: %s", opt, path, ftm_strerror(FTM_ENOMEM));
    if (!out_installed) {
        install(0);
        out_installed = 1;
    }
    for (int i = 0; i < OUT_SLOTS && o->slot < 0; i++)
        if (!out_used[i])
            o->slot = i;
    int fd = o->slot < 0 ? (errno = ENOMEM, -1) : ftm_file_tmp_open(o->dest, &o->tmp);
    if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(o->tmp);
        }
        free(o->tmp);
        free(o->dest);
        o->tmp = o->dest = NULL;
        if (e == ENOMEM)
            return cli_error(cmd, "%s %s: %s", opt, path, ftm_strerror(FTM_ENOMEM));
        return cli_usage_error(cmd, "%s %s: cannot create a file there: %s", opt, path,
                               strerror(e));
    }
    out_tmp[o->slot] = o->tmp;
    atomic_signal_fence(memory_order_seq_cst); /* the handler reads the path only once the slot is marked */
    out_used[o->slot] = 1;
    return 0;
}

static void release(cli_out *o)
{
    if (o->slot >= 0 && out_used[o->slot] && out_tmp[o->slot] == o->tmp)
        out_used[o->slot] = 0;
    free(o->tmp);
    free(o->dest);
    o->tmp = o->dest = NULL;
    o->f = NULL;
}

/* Why writing f failed, as errno says it (a full device, a file past
 * the size limit), where a write error left the library's FTM_EIO: one
 * more flush retries what is still buffered; 0 when it cannot tell. */
static int write_errno(FILE *f, int err)
{
    if (err != FTM_EIO || !f)
        return 0;
    errno = 0;
    return fflush(f) ? errno : 0;
}

/* Closes a pipe or device written in place. */
static int close_direct(const char *cmd, cli_out *o, int err)
{
    int why = write_errno(o->f, err);
    int gone = why == EPIPE || (o->f && err == FTM_EIO && cli_pipe_gone(fileno(o->f)));
    int bad = !o->f || (o->direct == 2 ? fflush(o->f) : fclose(o->f));
    o->f = NULL;
    o->direct = 0;
    if (gone || (!err && bad && errno == EPIPE))
        return CLI_EXIT_PIPE; /* a pipe's reader stopped early: quiet, as stdout's */
    if (why)
        return cli_error(cmd, "%s %s: cannot write it: %s", o->opt, o->path, strerror(why));
    if (!err && bad)
        return cli_error(cmd, "%s %s: cannot write it: %s", o->opt, o->path, strerror(errno));
    return err ? cli_error(cmd, "%s %s: %s", o->opt, o->path, ftm_strerror(err)) : 0;
}

void cli_out_discard(cli_out *o)
{
    if (o->direct) { /* written in place: nothing to take back */
        if (o->f && o->direct == 1)
            fclose(o->f);
        o->f = NULL;
        o->direct = 0;
    }
    if (!o->tmp)
        return;
    if (o->f)
        fclose(o->f);
    unlink(o->tmp);
    release(o);
}

int cli_out_commit(const char *cmd, cli_out *o, int err)
{
    if (o->direct)
        return close_direct(cmd, o, err);
    if (!o->tmp)
        return 0;
    const char *what = NULL;
    int why = write_errno(o->f, err);
    if (!err && fflush(o->f))
        why = errno;
    if (why)
        what = "cannot write it";
    else if (!err && ferror(o->f))
        err = FTM_EIO;
    if (!err && !what && fsync(fileno(o->f))) {
        what = "cannot write it";
        why = errno;
    }
    if (fclose(o->f) && !err && !what)
        err = FTM_EIO;
    o->f = NULL;
    if (!err && !what && rename(o->tmp, o->dest)) {
        what = "cannot rename the temporary file over it";
        why = errno;
    } else if (!err && !what && ftm_file_sync_dir(o->dest)) {
        int e = errno;
        release(o); /* in place: only its directory's sync failed */
        return cli_error(cmd, "%s %s: written, but cannot fsync its directory: %s", o->opt,
                         o->path, strerror(e));
    }
    int e = why;
    if (err || what) {
        unlink(o->tmp);
        release(o);
        if (what)
            return cli_error(cmd, "%s %s: %s: %s", o->opt, o->path, what, strerror(e));
        return cli_error(cmd, "%s %s: %s", o->opt, o->path, ftm_strerror(err));
    }
    release(o);
    return 0;
}
