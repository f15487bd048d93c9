/* Measuring variants: a scratch directory, the compiler, a child per run. */
#include "tunerun.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../runtime/mha_abi.h"
#include "../runtime/mha_time.h"
#include "fail.h"

volatile sig_atomic_t mha_tune_stop;

#define COMPILE_LIMIT 120.0 /* seconds for one compiler run */
#define RUN_LIMIT 180.0     /* seconds for one harness run */
#define MAXARGS 96

/* Runtime sources the harness links, as objects in the directory. */
static const char *const rt_units[] = {"tune_harness", "mha_ref", "mha_buf",
                                       "mha_time"};
#define NUNITS (sizeof rt_units / sizeof rt_units[0])

/* Files the runner creates, relative to its directory, for cleanup. */
static const char *const scratch[] = {"kernel.c", "variant", "out.txt",
	"err.txt", "tune_harness.o", "mha_ref.o", "mha_buf.o", "mha_time.o"};

/* Split words of s (blank separated) into argv from *n on; -1 if full. */
static int split(char *s, char **argv, int *n)
{
	for (char *w = strtok(s, " \t"); w; w = strtok(NULL, " \t")) {
		if (*n + 1 >= MAXARGS)
			return -1;
		argv[(*n)++] = w;
	}
	argv[*n] = NULL;
	return 0;
}

/* Run argv in dir with stdout and stderr to out.txt and err.txt, within
 * limit seconds.  Returns the exit status (0..255), 256 for a signal
 * (*sig set), 257 for a timeout, 258 when it could not start, or -1 when
 * mha_tune_stop interrupted it. */
static int run(const struct mha_runner *r, char **argv, double limit, int *sig)
{
	char out[600], err[600];
	double t0 = mha_now();
	pid_t pid;
	int st;

	snprintf(out, sizeof out, "%s/out.txt", r->dir);
	snprintf(err, sizeof err, "%s/err.txt", r->dir);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return 258;
	if (pid == 0) {
		int fo, fe;
		/* its own process group: Ctrl-C reaches the tuner, which
		 * decides; the child is killed, never half-measured */
		setpgid(0, 0);
		fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fo < 0 || fe < 0 || chdir(r->dir) != 0)
			_exit(127);
		dup2(fo, 1);
		dup2(fe, 2);
		close(fo);
		close(fe);
		if (r->threads > 1) {
			char n[16];
			snprintf(n, sizeof n, "%d", r->threads);
			setenv("OMP_NUM_THREADS", n, 1);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	setpgid(pid, pid);
	for (;;) {
		struct timespec nap = {0, 5000000};
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return 258;
		if (mha_tune_stop || mha_now() - t0 > limit) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			return mha_tune_stop ? -1 : 257;
		}
		nanosleep(&nap, NULL);
	}
	if (WIFSIGNALED(st)) {
		*sig = WTERMSIG(st);
		return 256;
	}
	return WEXITSTATUS(st);
}

/* The first line of file name in the directory (into buf of size n). */
static void first_line(const struct mha_runner *r, const char *name,
                       char *buf, size_t n)
{
	char path[600];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof path, "%s/%s", r->dir, name);
	f = fopen(path, "r");
	if (!f)
		return;
	if (!fgets(buf, (int)n, f))
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* The first line of the compiler's messages that says error, else the
 * first line. */
static void compile_error(const struct mha_runner *r, char *buf, size_t n)
{
	char path[600], line[512];
	FILE *f;

	first_line(r, "err.txt", buf, n);
	snprintf(path, sizeof path, "%s/err.txt", r->dir);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof line, f))
		if (strstr(line, "error")) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(buf, n, "%.200s", line);
			break;
		}
	fclose(f);
}

/* Write len bytes to dir/name; 0 or -1. */
static int put(const struct mha_runner *r, const char *name, const char *text,
               size_t len)
{
	char path[1024];
	FILE *f;
	int ok;

	snprintf(path, sizeof path, "%s/%s", r->dir, name);
	f = fopen(path, "wb");
	if (!f)
		return -1;
	ok = fwrite(text, 1, len, f) == len;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* The compiler command and flags as argv, from n on; -1 if too long. */
static int cc_argv(const struct mha_runner *r, char **argv, int *n,
                   char *ccbuf, char *flagbuf)
{
	strcpy(ccbuf, r->cc);
	strcpy(flagbuf, r->cflags);
	*n = 0;
	if (split(ccbuf, argv, n) || *n == 0)
		return -1;
	argv[(*n)++] = "-std=c11";
	if (split(flagbuf, argv, n))
		return -1;
	if (r->threads > 1)
		argv[(*n)++] = "-fopenmp";
	argv[*n] = NULL;
	return 0;
}

int mha_runner_open(struct mha_runner *r, const char *cc, const char *cflags,
                    int threads, const char *wrapper, char *err)
{
	const char *tmp = getenv("TMPDIR");
	char *argv[MAXARGS], ccbuf[128], flagbuf[256], sub[600];
	int n, rc, sig = 0;

	memset(r, 0, sizeof *r);
	snprintf(r->cc, sizeof r->cc, "%s", cc);
	snprintf(r->cflags, sizeof r->cflags, "%s", cflags);
	r->threads = threads;
	if (wrapper && strlen(wrapper) >= sizeof r->wrapper)
		return mhagen_fail(err, "--run-wrapper: the command is too long");
	snprintf(r->wrapper, sizeof r->wrapper, "%s", wrapper ? wrapper : "");
	snprintf(r->dir, sizeof r->dir, "%s/mhagen-tune.XXXXXX",
	         tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(r->dir)) {
		mhagen_fail(err, "cannot make a temporary directory "
		            "'%.300s': %s", r->dir, strerror(errno));
		r->dir[0] = '\0';
		return -1;
	}
	snprintf(sub, sizeof sub, "%s/runtime", r->dir);
	mkdir(sub, 0700);
	snprintf(sub, sizeof sub, "%s/runtime/harness", r->dir);
	mkdir(sub, 0700);
	for (size_t i = 0; i < mhagen_nharness; ++i)
		if (put(r, mhagen_harness[i].path, mhagen_harness[i].text,
		        mhagen_harness[i].len)) {
			return mhagen_fail(err, "cannot write to '%.300s': %s", r->dir,
			                   strerror(errno));
		}

	/* the compiler: its first --version line names it in records */
	strcpy(ccbuf, r->cc);
	n = 0;
	if (split(ccbuf, argv, &n) || n == 0) {
		return mhagen_fail(err, "--cc: '%s' is not a command", cc);
	}
	argv[n++] = "--version";
	argv[n] = NULL;
	rc = run(r, argv, COMPILE_LIMIT, &sig);
	if (rc < 0) {
		return mhagen_fail(err, "interrupted");
	}
	first_line(r, "out.txt", r->cc_version, sizeof r->cc_version);
	if (rc != 0 || !r->cc_version[0]) {
		return mhagen_fail(err, "compiler '%s' not found or not working "
		                   "(set --cc or $CC)", cc);
	}

	/* harness and runtime objects, once */
	for (size_t u = 0; u < NUNITS; ++u) {
		char src[128], obj[64];
		if (cc_argv(r, argv, &n, ccbuf, flagbuf) || n + 6 >= MAXARGS) {
			return mhagen_fail(err, "--cflags: too many flags");
		}
		snprintf(src, sizeof src, u == 0 ? "runtime/harness/%s.c"
		                                 : "runtime/%s.c", rt_units[u]);
		snprintf(obj, sizeof obj, "%s.o", rt_units[u]);
		argv[n++] = "-D_POSIX_C_SOURCE=200809L";
		argv[n++] = "-c";
		argv[n++] = src;
		argv[n++] = "-o";
		argv[n++] = obj;
		argv[n] = NULL;
		rc = run(r, argv, COMPILE_LIMIT, &sig);
		if (rc != 0) {
			char msg[256];
			if (rc < 0) {
				return mhagen_fail(err, "interrupted");
			}
			compile_error(r, msg, sizeof msg);
			return mhagen_fail(err, "cannot build the measuring harness "
			                   "with '%.100s %.100s': %.200s", r->cc,
			                   r->cflags, msg);
		}
	}
	r->ready = 1;
	return 0;
}

/* Drop the reference outputs kept for the previous spec. */
static void drop_refs(struct mha_runner *r)
{
	char path[1024];

	for (int i = 0; i < 16; ++i) {
		snprintf(path, sizeof path, "%s/ref-%d.ref", r->dir, i);
		unlink(path);
	}
}

void mha_runner_close(struct mha_runner *r)
{
	char path[1024];

	if (!r->dir[0])
		return;
	drop_refs(r);
	for (size_t i = 0; i < sizeof scratch / sizeof scratch[0]; ++i) {
		snprintf(path, sizeof path, "%s/%s", r->dir, scratch[i]);
		unlink(path);
	}
	for (size_t i = 0; i < mhagen_nharness; ++i) {
		snprintf(path, sizeof path, "%s/%s", r->dir, mhagen_harness[i].path);
		unlink(path);
	}
	snprintf(path, sizeof path, "%s/runtime/harness", r->dir);
	rmdir(path);
	snprintf(path, sizeof path, "%s/runtime", r->dir);
	rmdir(path);
	rmdir(r->dir);
	r->dir[0] = '\0';
}

int mha_runner_measure(struct mha_runner *r, const struct mha_spec *s,
                       const char *kernel, size_t len, double seconds,
                       struct mha_result *res)
{
	char *argv[MAXARGS], ccbuf[128], flagbuf[256], wrap[256];
	char a[17][64];
	char line[512];
	int n, rc, sig = 0, w = 0;
	long sq = s->seq_q ? s->seq_q : 256, skv = s->seq_kv ? s->seq_kv : sq;

	memset(res, 0, sizeof *res);
	mha_spec_tuning_key(s, line, sizeof line);
	if (strcmp(line, r->refs_for) != 0) {
		drop_refs(r);
		snprintf(r->refs_for, sizeof r->refs_for, "%s", line);
	}
	if (put(r, "kernel.c", kernel, len)) {
		snprintf(res->reason, sizeof res->reason,
		         "cannot write the kernel: %s", strerror(errno));
		return 0;
	}
	if (cc_argv(r, argv, &n, ccbuf, flagbuf) || n + 10 >= MAXARGS) {
		snprintf(res->reason, sizeof res->reason, "too many flags");
		return 0;
	}
	argv[n++] = "-o";
	argv[n++] = "variant";
	argv[n++] = "kernel.c";
	for (size_t u = 0; u < NUNITS; ++u) {
		static char objs[NUNITS][32];
		snprintf(objs[u], sizeof objs[u], "%s.o", rt_units[u]);
		argv[n++] = objs[u];
	}
	argv[n++] = "-lm";
	argv[n] = NULL;
	rc = run(r, argv, COMPILE_LIMIT, &sig);
	if (rc < 0)
		return -1;
	if (rc != 0) {
		char msg[200];
		compile_error(r, msg, sizeof msg);
		snprintf(res->reason, sizeof res->reason, "compile: %s",
		         rc == 257 ? "timed out" : msg);
		return 0;
	}

	/* the harness's arguments: the problem, the lengths, the checks */
	snprintf(a[0], 64, "%ld", s->h);
	snprintf(a[1], 64, "%ld", s->kv_heads);
	snprintf(a[2], 64, "%ld", s->dk);
	snprintf(a[3], 64, "%ld", s->dv);
	snprintf(a[4], 64, "%ld", sq);
	snprintf(a[5], 64, "%ld", skv);
	snprintf(a[6], 64, "%u", s->mask);
	snprintf(a[7], 64, "%d", s->align);
	snprintf(a[8], 64, "%d,%d", s->layout, s->packed);
	snprintf(a[9], 64, "%a", (double)(float)mha_spec_scale(s));
	snprintf(a[10], 64, "%ld,%ld,%ld", s->window, s->window_left,
	         s->window_right);
	snprintf(a[11], 64, "%d", s->seq_q != 0);
	snprintf(a[12], 64, "%g", seconds);
	snprintf(a[13], 64, "%d", r->threads <= 1);
	snprintf(a[14], 64, "ref");
	snprintf(a[15], 64, "%d,%d", s->kv_dtype, s->dtype);
	/* the wrapper's words first, when there is one */
	snprintf(wrap, sizeof wrap, "%s", r->wrapper);
	if (split(wrap, argv, &w) || w + 18 >= MAXARGS) {
		snprintf(res->reason, sizeof res->reason, "--run-wrapper: too many "
		         "words");
		return 0;
	}
	argv[w] = "./variant";
	for (int i = 0; i < 16; ++i)
		argv[w + i + 1] = a[i];
	argv[w + 17] = NULL;
	rc = run(r, argv, RUN_LIMIT, &sig);
	if (rc < 0)
		return -1;
	first_line(r, "out.txt", line, sizeof line);
	if (rc == 0 && sscanf(line, "ok %lf %lf %lf %d %lf", &res->median,
	                      &res->min, &res->max, &res->runs,
	                      &res->flops) == 5 && res->median > 0) {
		res->ok = 1;
		return 0;
	}
	if (rc == 256)
		snprintf(res->reason, sizeof res->reason, "crashed (signal %d: %s)",
		         sig, strsignal(sig));
	else if (rc == 257)
		snprintf(res->reason, sizeof res->reason, "timed out after %.0f s",
		         RUN_LIMIT);
	else if (rc == 127 && w > 0)
		snprintf(res->reason, sizeof res->reason, "--run-wrapper '%.150s' "
		         "could not run the variant (exit status 127)", r->wrapper);
	else if (strncmp(line, "fail ", 5) == 0)
		snprintf(res->reason, sizeof res->reason, "%.250s", line + 5);
	else
		snprintf(res->reason, sizeof res->reason, "exit status %d, "
		         "printed '%.120s'", rc, line);
	return 0;
}
