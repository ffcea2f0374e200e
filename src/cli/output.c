/* Messages on stderr (always one line), the hang report,
 * and the final check that everything written to stdout got there. */
#define _GNU_SOURCE /* ftrylockfile, fflush_unlocked */
#include "cli.h"
#include "ftmesh/error.h"
#include "ftmesh/runtime.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *cli_s(long n) { return n == 1 ? "" : "s"; }

/* Warnings wait here until cli_warn_flush: an error that comes after
 * them drops them, so a refused command still prints one line. */
static char **warn_q;
static int warn_n, warn_cap;

static void warn_drop(void)
{
    for (int k = 0; k < warn_n; k++)
        free(warn_q[k]);
    free(warn_q);
    warn_q = NULL;
    warn_n = warn_cap = 0;
}

/* Room for one more warning in the queue: 1, or 0 (out of memory). */
static int warn_room(void)
{
    if (warn_n < warn_cap)
        return 1;
    int cap = warn_cap ? 2 * warn_cap : 16;
    char **q = realloc(warn_q, sizeof *q * (size_t)cap);
    if (!q)
        return 0;
    warn_q = q;
    warn_cap = cap;
    return 1;
}

void cli_warn_flush(void)
{
    for (int k = 0; k < warn_n; k++)
        fputs(warn_q[k], stderr);
    warn_drop();
}

/* "ftmesh CMD: PREFIX" then the message with control characters escaped,
 * so an echoed argument cannot break the one-line rule; to f. */
static void message_to(FILE *f, const char *cmd, const char *prefix, const char *fmt,
                       va_list ap)
{
    char small[1024], *buf = small;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n >= (int)sizeof small && (buf = malloc((size_t)n + 1)) != NULL)
        vsnprintf(buf, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    if (!buf)
        buf = small;
    fprintf(f, "ftmesh%s%s: %s", cmd ? " " : "", cmd ? cmd : "", prefix);
    for (const unsigned char *p = (const unsigned char *)buf; *p; p++) {
        if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p == '\r')
            fputs("\\r", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('\n', f);
    if (buf != small)
        free(buf);
}

/* The last error line (cli_last_error), kept for the ranks' agreement. */
static char last_error[CLI_ERROR_MAX];

/* An error: the warnings not yet printed go (the error is the one line). */
static void message(const char *cmd, const char *prefix, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    warn_drop();
    message_to(stderr, cmd, prefix, fmt, ap);
    FILE *f = fmemopen(last_error, sizeof last_error, "w");
    if (f) {
        message_to(f, cmd, prefix, fmt, ap2);
        fclose(f);
    }
    last_error[sizeof last_error - 1] = 0; /* a long line is cut */
    va_end(ap2);
}

const char *cli_last_error(void) { return last_error; }

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    message(cmd, "", fmt, ap);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

int cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    message(cmd, "", fmt, ap);
    va_end(ap);
    return CLI_EXIT_FAIL;
}

void cli_warn(const char *cmd, const char *fmt, ...)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = warn_room() ? open_memstream(&buf, &len) : NULL;
    va_list ap;
    va_start(ap, fmt);
    message_to(f ? f : stderr, cmd, "warning: ", fmt, ap); /* no room: now */
    va_end(ap);
    if (f && fclose(f) == 0 && buf)
        warn_q[warn_n++] = buf;
    else if (f)
        free(buf);
}

/* Held while stdout closes: another thread (MPI's silent-rank report)
 * may flush it only while it is open. */
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static int out_closed;

int cli_pipe_gone(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLOUT };
    return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

int cli_close_stdout(const char *cmd)
{
    pthread_mutex_lock(&out_mu);
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int e = errno;
    int gone = bad && (e == EPIPE || cli_pipe_gone(fileno(stdout)));
    if (fclose(stdout) != 0 && !bad) {
        bad = 1;
        e = errno;
        gone = e == EPIPE;
    }
    out_closed = 1;
    pthread_mutex_unlock(&out_mu);
    if (!bad)
        return 0;
    if (gone) /* the reader stopped reading (| head): quiet, as cat would be */
        return CLI_EXIT_PIPE;
    return cli_error(cmd, "cannot write the output to stdout: %s", e ? strerror(e) : "write error");
}

/* Flushes f unless another thread holds its lock. */
static void flush_if_free(FILE *f)
{
    if (ftrylockfile(f))
        return;
    fflush_unlocked(f);
    funlockfile(f);
}

void cli_flush_unblocked(void)
{
    if (pthread_mutex_trylock(&out_mu))
        return; /* stdout is closing: what it held is being written */
    if (!out_closed)
        flush_if_free(stdout);
    flush_if_free(stderr);
    pthread_mutex_unlock(&out_mu);
}

void cli_print_stuck(const char *cmd, const ftm_mesh *m, const ftm_stuck *st, int n,
                     double timeout_s)
{
    double t = timeout_s > 0 ? timeout_s : FTM_RT_DEFAULT_HANG_S;
    char ts[32]; /* 5.0 s; a timeout under 0.1 s as given (0.01 s, not 0.0) */
    snprintf(ts, sizeof ts, t < 0.1 ? "%.3g" : "%.1f", t);
    if (n == 0 || st[0].wait == FTM_WAIT_DONE) { /* idle, between programs */
        fprintf(stderr, "ftmesh %s: hang: no progress for %s s; no chip of this process is "
                "stuck in a transfer (they wait %s)%s\n", cmd, ts,
                cli_ranks_count() > 1 ? "on another process" : "for each other between programs",
                n ? ":" : "");
    } else {
        fprintf(stderr, "ftmesh %s: hang: no progress for %s s; %d chip%s stuck:\n", cmd, ts, n,
                cli_s(n));
    }
    for (int i = 0; i < n && i < 32; i++) {
        const ftm_stuck *s = &st[i];
        if (s->wait == FTM_WAIT_DONE) {
            fprintf(stderr, "  chip (%d,%d): %s\n", ftm_mesh_row(m, s->chip), ftm_mesh_col(m, s->chip),
                    strcmp(s->phase, "barrier") ? "finished, waiting for the others"
                                                : "waiting in a barrier for chips that did not reach it");
            continue;
        }
        fprintf(stderr, "  chip (%d,%d): %s step %d: waiting to %s %zu byte%s %s (%d,%d) on link %s\n",
                ftm_mesh_row(m, s->chip), ftm_mesh_col(m, s->chip), s->phase, s->step,
                s->wait == FTM_WAIT_RECV ? "receive" : "send", s->missing, cli_s((long)s->missing),
                s->wait == FTM_WAIT_RECV ? "from" : "to", ftm_mesh_row(m, s->peer),
                ftm_mesh_col(m, s->peer), ftm_mesh_dir_name(s->dir));
    }
    if (n > 32)
        fprintf(stderr, "  ... and %d more\n", n - 32);
}
