/* mhagen: write a shape-specialized multi-head attention kernel in C. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../runtime/mha_cpu.h"
#include "fail.h"
#include "gen.h"
#include "knobs.h"
#include "cli.h"
#include "depfile.h"
#include "spec.h"
#include "tune.h"
#include "tunedb.h"

static const char usage[] =
"usage: mhagen --h N --dk N [options] [-o FILE] [--header FILE]\n"
"\n"
"Writes a C kernel computing softmax(q k^T * scale + mask) v per head.\n"
"\n"
"spec (a --spec FILE holds the same settings as 'key = value' lines):\n"
"  --h N               query heads (1 to 1024)\n"
"  --dk N              head dimension of q and k (1 to 4096)\n"
"  --dv N              head dimension of v and out (default: dk)\n"
"  --kv-heads N        key/value heads, dividing h (default: h)\n"
"  --seq N             fix the query length (and key length, unless\n"
"                      --seq-kv); default: any length at run time\n"
"  --seq-kv N          fix the key/value length\n"
"  --mask M            none (default), or a comma list of causal, padding,\n"
"                      bias (float, added), bool (bytes, nonzero = take\n"
"                      part), keys (key mask [batch][seq_kv], bytes)\n"
"  --mask-dims D       none (default), b, h or b,h: the bias's and bool\n"
"                      mask's leading [batch][h] dimensions\n"
"  --causal-align A    bottom-right (default) or top-left\n"
"  --window N          sliding window: a query sees only its N most recent\n"
"                      visible keys (aligned like causal)\n"
"  --window-left L     window by position (FlashAttention's window_size):\n"
"  --window-right R    query i sees keys i+shift-L to i+shift+R, shift as\n"
"                      for --alibi; -1 (default) leaves a side unbounded;\n"
"                      with causal the right side is causal's\n"
"  --layout L          bshd (default), bhsd or sbhd ([seq][batch][h][d])\n"
"  --packed P          qkv or kv: q, k, v (qkv) or k, v (kv) in one buffer\n"
"                      of packed rows, passed as q or k (bshd, sbhd)\n"
"  --varlen V          per-sequence lengths, FlashAttention's: padded\n"
"                      (q_len[b], kv_len[b] in padded buffers) or packed\n"
"                      (cu_seqlens_q/k offsets, no padding); causal,\n"
"                      windows and ALiBi align to each sequence\n"
"  --dtype T           how q and out (and k, v unless --kv-dtype) are\n"
"                      stored: f32 (default), f16 or bf16 as uint16_t\n"
"                      bits; q read exactly, out rounded to nearest\n"
"                      even (avx2 needs F16C: -mf16c); no 9-argument NAME\n"
"  --kv-dtype T        how k and v are stored: the --dtype, f32, f16 (IEEE\n"
"                      binary16) or bf16, as uint16_t bits, or q8\n"
"                      (ggml's q8_0: struct mha_q8_0 blocks of 32,\n"
"                      dk and dv multiples of 32), converted exactly\n"
"                      to float (avx2 needs F16C: -mf16c); no\n"
"                      9-argument NAME, struct mha_args only\n"
"  --scale X           multiplies q.k (default 1/sqrt(dk))\n"
"  --target T          a target (listed below), or native (default: the\n"
"                      best target of this machine); or a comma list of\n"
"                      one architecture's targets, best first (avx512,\n"
"                      avx2,scalar): one file, built with no ISA flags,\n"
"                      that runs the first variant the CPU has\n"
"  --name SYMBOL       exported function (default: canonical name)\n"
"  --weights           also export NAME_weights, which writes the softmax\n"
"                      weights [batch][h][seq_q][seq_kv] (spec file:\n"
"                      weights = true or false)\n"
"  --softcap X         cap scores: X * tanh(s / X), after the scale\n"
"  --alibi             ALiBi: subtract slope[head] * distance from each\n"
"                      score, the slopes an input (alibi_slopes[h])\n"
"  --max-bias X        ALiBi with slopes fixed by ggml's rule from X\n"
"  --sinks             a sink logit per head (sinks[h]) joins each row's\n"
"                      softmax denominator\n"
"  --lse               also write each row's log-sum-exp (lse\n"
"                      [batch][h][seq_q]) and export NAME_merge\n"
"  --spec FILE         read settings from FILE; flags override them\n"
"layer (torch.nn.MultiheadAttention's forward, projections included):\n"
"  --embed E           write the whole layer of embed_dim E instead of a\n"
"                      kernel: heads of E / h, no --dk; --layout bshd is\n"
"                      batch_first=True, sbhd batch_first=False\n"
"  --cross             query and key/value inputs apart (else one input)\n"
"  --kdim N, --vdim N  the key and value inputs' widths (default E; need\n"
"                      --cross)\n"
"  --proj-bias B       true (default) or false: bias=False\n"
"  --kv-heads N        with --embed: k and v projected to N heads\n"
"                      (grouped-query projections)\n"
"  --add-bias-kv       bias_k and bias_v: a key and value after the\n"
"                      inputs' (add_bias_kv=True; params bias_k, bias_v)\n"
"  --add-zero-attn     a zero key and value after them (add_zero_attn)\n"
"  --kv-cache N        the decoder step: the new tokens' k and v stored in\n"
"                      the caller's cache of N positions (k_cache, v_cache\n"
"                      [batch][N][kv_heads * E / h] of --kv-dtype) at\n"
"                      cache_len[b], their queries over it, causal\n"
"tuning knobs:\n";

/* The second half of the usage, after the knobs. */
static const char usage_out[] =
"output:\n"
"  -o FILE             write the kernel to FILE atomically (default stdout)\n"
"  --header FILE       also write a header with the prototype\n"
"  --template-dir DIR  use templates from DIR instead of the built-in ones\n"
"  --tuning-db FILE    use the knobs of the fastest variant measured on this\n"
"                      machine by 'mhagen tune' (defaults when none)\n"
"  --depfile FILE      also write a Make rule: the -o and --header files\n"
"                      depend on the --spec file, the --tuning-db file and\n"
"                      the files read under --template-dir\n"
"  --tuning-cpu NAME   use the records of CPU NAME (as in the database's\n"
"                      \"cpu\" field) instead of this machine's\n"
"  --tuning-strict     fail when the database has no matching record\n"
"  --emit WHAT         kernel (default), exp (the vector exps alone, exp\n"
"                      and 2^x, for accuracy tests), name, registry (one\n"
"                      X-macro line), cflags (the compiler flags the\n"
"                      kernel needs), targets (the target tables as make\n"
"                      variables)\n"
"  --help, --version  this text; the version\n"
"An output file whose bytes would not change is left untouched.\n"
"\n"
"kernel (C11; the --header file declares it and struct mha_args):\n"
"  void NAME_args(const struct mha_args *a);\n"
"and, when the spec reads no input beyond these nine (no --alibi, --sinks,\n"
"--lse) and every tensor is floats (no --dtype, --kv-dtype):\n"
"  void NAME(const float *q, const float *k, const float *v, float *out,\n"
"    size_t batch, size_t seq_q, size_t seq_kv,\n"
"    const int32_t *kv_len, const float *bias);\n"
"Layout bshd: q [batch][seq_q][h][dk], k [batch][seq_kv][kv_heads][dk],\n"
"v [batch][seq_kv][kv_heads][dv], out [batch][seq_q][h][dv]; kv_len is NULL\n"
"unless the mask has padding, bias NULL unless it has bias ([seq_q][seq_kv]).\n"
"alibi_slopes [h], sinks [h] and lse [batch][h][seq_q] are fields of\n"
"struct mha_args.  With --weights, NAME_args also writes the softmax\n"
"weights when a->weights is set, and NAME_weights takes them as a tenth\n"
"argument, float *weights ([batch][h][seq_q][seq_kv]).  With --lse,\n"
"NAME_args writes lse when a->lse is set, and void NAME_merge(float *out,\n"
"float *lse, const float *out2, const float *lse2, size_t batch, size_t\n"
"seq_q) merges two calls over disjoint keys.  size_t NAME_workspace(const\n"
"struct mha_args *a) gives the scratch a call takes (pass it as\n"
"a->workspace, or the kernel mallocs it); a->parallel runs the work on the\n"
"host's threads; the header's NAME_STACK_BYTES bounds the stack a call\n"
"takes.\n"
"A --target list's file also exports const char *NAME_variant(void), the\n"
"name of the variant that runs.\n"
"\n"
"environment:\n"
"  MHAGEN_TRACE        when set, template errors carry a Lua traceback\n"
"  MHAGEN_CPU_SECONDS  CPU time one generation may take (default 20)\n"
"  CC                  mhagen tune: the compiler of the variants\n"
"  TMPDIR              mhagen tune: where variants are built\n"
"  MHAGEN_VARIANT      read by kernels of a --target list on their first\n"
"                      call: the variant to run, when the CPU has it\n"
"\n"
"A layer (--embed) exports size_t NAME_packed_floats(void), void\n"
"NAME_pack(float *packed, const struct mha_layer_params *p), size_t\n"
"NAME_workspace(const struct mha_layer_args *a) and void\n"
"NAME_forward(const struct mha_layer_args *a) (README, \"For PyTorch\n"
"users\").\n"
"\n"
"mhagen tune SPEC-FLAGS [--db FILE] [--budget SECONDS] ... measures the\n"
"variants of a spec on this machine (see mhagen tune --help).\n"
"\n"
"targets (templates/targets/NAME.lua, or under --template-dir):\n";

/* The knobs part of --help, from the knob table. */
static void print_knobs(void)
{
	for (int k = 0; k < MHA_KNOB_N; ++k) {
		const struct mha_knob_def *d = &mha_knob_table[k];
		char flag[32];
		snprintf(flag, sizeof flag, "--%s %s", d->key, d->arg);
		printf("  %-19s ", flag);
		for (const char *p = d->help; *p; ++p)
			if (*p == '\n')
				printf("\n%22s", "");
			else
				putchar(*p);
		putchar('\n');
	}
}

/* The targets part of --help, from the target tables; 0 or -1 with err. */
static int print_targets(const char *template_dir, char *err)
{
	struct mhagen_target t[MHAGEN_TARGETS_MAX];
	size_t n;

	if (mhagen_targets(template_dir, t, MHAGEN_TARGETS_MAX, &n, err))
		return -1;
	for (size_t i = 0; i < n; ++i)
		printf("  %-10s %ld floats, %s%s%s%s%s; %s\n", t[i].name, t[i].width,
		       t[i].arch[0] ? t[i].arch : "any architecture",
		       t[i].cpu[0] ? ", CPU " : "", t[i].cpu,
		       t[i].cflags[0] ? ", flags " : "", t[i].cflags,
		       t[i].defaults);
	return 0;
}

/* An output file being written: data goes to a temporary file beside the
 * path, renamed over it only when every output is ready; a file that holds
 * the same bytes already is left untouched (tmp stays NULL). */
struct staged {
	const char *path;
	char *tmp;
};

/* Whether the regular file at path holds exactly the len bytes of data. */
static int same_bytes(const char *path, const char *data, size_t len)
{
	char buf[65536];
	struct stat sb;
	int fd = open(path, O_RDONLY), same = 0;
	size_t at = 0;

	if (fd < 0)
		return 0;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    (size_t)sb.st_size == len) {
		ssize_t got = 1;
		while (at < len &&
		       (got = read(fd, buf, sizeof buf)) > 0 &&
		       (size_t)got <= len - at &&
		       memcmp(buf, data + at, (size_t)got) == 0)
			at += (size_t)got;
		same = at == len && got >= 0;
	}
	close(fd);
	return same;
}

/* Write len bytes to a new temporary file beside st->path, unless path
 * holds them already; 0 or -1. */
static int stage(struct staged *st, const char *path, const char *data,
                 size_t len, char *err)
{
	size_t n = strlen(path);
	mode_t um;
	int fd;

	st->path = path;
	if (same_bytes(path, data, len))
		return 0;
	st->tmp = malloc(n + 16);
	if (!st->tmp) {
		mhagen_fail(err, "out of memory");
		return -1;
	}
	memcpy(st->tmp, path, n);
	memcpy(st->tmp + n, ".tmp.XXXXXX", 12);
	fd = mkstemp(st->tmp);
	if (fd < 0) {
		mhagen_fail(err, "cannot write '%s': %s", path,
		            strerror(errno));
		free(st->tmp);
		st->tmp = NULL;
		return -1;
	}
	um = umask(0);
	umask(um);
	fchmod(fd, 0666 & ~um);
	while (len > 0) {
		ssize_t w = write(fd, data, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			goto fail;
		data += w;
		len -= (size_t)w;
	}
	if (close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	return 0;
fail:
	mhagen_fail(err, "cannot write '%s': %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(st->tmp);
	free(st->tmp);
	st->tmp = NULL;
	return -1;
}

/* Drop a staged file that will not be used. */
static void unstage(struct staged *st)
{
	if (st->tmp) {
		unlink(st->tmp);
		free(st->tmp);
		st->tmp = NULL;
	}
}

/* Move a staged file over its path; 0 or -1. */
static int commit(struct staged *st, char *err)
{
	int rc;

	if (!st->tmp)
		return 0;
	rc = rename(st->tmp, st->path);

	if (rc != 0)
		mhagen_fail(err, "cannot write '%s': %s", st->path,
		            strerror(errno));
	unstage(st);
	return rc;
}

/* The target tables as make variables (--emit targets): MHA_TARGETS, and
 * per target MHA_ARCH_t, MHA_GUARD_t, MHA_CPU_t, MHA_CFLAGS_t, MHA_WIDTH_t,
 * MHA_RANK_t;
 * MHA_NATIVE, the target this CPU would pick.  NULL with err on failure. */
static char *targets_mk(const struct mhagen_cli *cli, size_t *len, char *err)
{
	struct mhagen_target t[MHAGEN_TARGETS_MAX];
	const struct mhagen_target *native;
	size_t n, cap = 256 + MHAGEN_TARGETS_MAX * 512;
	char *buf;

	if (mhagen_targets(cli->template_dir, t, MHAGEN_TARGETS_MAX, &n, err))
		return NULL;
	native = mhagen_target_native(t, n);
	buf = malloc(cap);
	if (!buf) {
		mhagen_fail(err, "out of memory");
		return NULL;
	}
	snprintf(buf, cap, "# mhagen --emit targets: the target tables\n"
	         "MHA_TARGETS :=");
	for (size_t i = 0; i < n; ++i)
		mha_append(buf, cap, " %s", t[i].name);
	mha_append(buf, cap, "\nMHA_NATIVE := %s\n", native ? native->name : "");
	for (size_t i = 0; i < n; ++i)
		mha_append(buf, cap, "MHA_ARCH_%s := %s\nMHA_GUARD_%s := %s\n"
		           "MHA_CPU_%s := %s\nMHA_CFLAGS_%s := %s\n"
		           "MHA_WIDTH_%s := %ld\nMHA_RANK_%s := %ld\n", t[i].name,
		           t[i].arch, t[i].name, t[i].guard, t[i].name, t[i].cpu,
		           t[i].name, t[i].cflags, t[i].name, t[i].width, t[i].name,
		           t[i].rank);
	*len = strlen(buf);
	return buf;
}

/* Apply the knobs of the fastest record of the tuning database for the
 * CPU --tuning-cpu names (else this machine's) to the spec, keeping its
 * name, and say on stderr which record.  Without one: the defaults and a
 * note, or with --tuning-strict an error naming the CPUs that have
 * records.  0 or -1 with err. */
static int use_tuning_db(struct mhagen_cli *cli, char *err)
{
	struct mha_tunedb db;
	struct mha_knob want[MHA_KNOBS_MAX];
	const struct mha_tune_rec *best;
	const char *cpu = cli->tuning_cpu ? cli->tuning_cpu : mha_cpu_model();
	char key[512], hash[32], flags[256], cpus[512], hint[700] = "";
	size_t other;
	double time;
	int nwant;

	if (mhagen_template_hash(cli->template_dir, hash, sizeof hash, err) ||
	    mha_tunedb_load(&db, cli->tuning_db, err))
		return -1;
	mha_spec_tuning_key(&cli->spec, key, sizeof key);
	nwant = mha_knobs_of_spec(&cli->spec, want);
	best = mha_tunedb_best(&db, key, cli->spec.target, cpu, hash,
	                       want, nwant, &other, &time);
	if (!best) {
		mha_tunedb_cpus(&db, key, cli->spec.target, hash, cpu, cpus,
		                sizeof cpus);
		if (cpus[0])
			snprintf(hint, sizeof hint, " (records exist for CPU %s: "
			         "choose one with --tuning-cpu)", cpus);
		else if (other)
			snprintf(hint, sizeof hint, " (records from another template "
			         "hash are not used)");
		mha_tunedb_free(&db);
		if (cli->tuning_strict)
			return mhagen_fail(err, "--tuning-strict: tuning db %s has no "
			                   "record for %s on CPU '%s' with these "
			                   "templates%s", cli->tuning_db, key, cpu, hint);
		fprintf(stderr, "mhagen: tuning db %s: no record for %s on CPU '%s' "
		        "with these templates%s; default knobs\n", cli->tuning_db,
		        key, cpu, hint);
		return 0;
	}
	for (int i = 0; i < best->nknobs; ++i)
		if (!mha_spec_is_set(&cli->spec, best->knobs[i].key) &&
		    mha_spec_set(&cli->spec, best->knobs[i].key, best->knobs[i].val,
		                 err)) {
			mha_tunedb_free(&db);
			return -1;
		}
	mha_knobs_flags(best->knobs, best->nknobs, flags, sizeof flags);
	fprintf(stderr, "mhagen: tuning db %s: using %s%s (median %.4g ms, "
	        "%.1f GFLOP/s, %s %s)\n", cli->tuning_db,
	        best->is_default ? "the default knobs" : flags,
	        best->is_default && best->nknobs ? flags : "",
	        time * 1e3, best->gflops * best->median / time, best->env.cc,
	        best->env.cflags);
	mha_tunedb_free(&db);
	return mha_spec_finish(&cli->spec, err);
}

/* The template files read under --template-dir, for --depfile. */
static struct mhagen_deps template_reads;

static void on_read(const char *path)
{
	mhagen_deps_add(&template_reads, path);
}

/* The --depfile rule: the outputs depend on the spec file, the tuning
 * database and every template file read; NULL with err on failure. */
static char *deps_text(const struct mhagen_cli *cli, size_t *len, char *err)
{
	struct mhagen_deps d = {NULL, 0, 0, 0};
	const char *t[2];
	size_t nt = 0;
	char *text;

	if (cli->spec_file)
		mhagen_deps_add(&d, cli->spec_file);
	if (cli->tuning_db)
		mhagen_deps_add(&d, cli->tuning_db);
	for (size_t i = 0; i < template_reads.n; ++i)
		mhagen_deps_add(&d, template_reads.path[i]);
	d.oom |= template_reads.oom;
	t[nt++] = cli->out;
	if (cli->header)
		t[nt++] = cli->header;
	text = mhagen_deps_rule(&d, t, nt, len, err);
	mhagen_deps_free(&d);
	return text;
}

int main(int argc, char **argv)
{
	struct mhagen_cli cli;
	struct staged out = {NULL, NULL}, hdr = {NULL, NULL}, dep = {NULL, NULL};
	char err[MHAGEN_ERR];
	char *text = NULL, *header = NULL, *deps = NULL;
	size_t len = 0, hlen = 0, dlen = 0;
	int rc = 2;

	if (argc > 1 && strcmp(argv[1], "tune") == 0)
		return mhagen_tune_main(argc - 1, argv + 1);
	mhagen_on_read = on_read;
	if (mhagen_parse_args(&cli, argc, argv, err))
		goto fail;
	if (cli.help) {
		fputs(usage, stdout);
		print_knobs();
		fputs(usage_out, stdout);
		if (print_targets(cli.template_dir, err))
			goto fail;
		rc = 0;
		goto done;
	}
	if (cli.version) {
		printf("mhagen %s\n", MHAGEN_VERSION);
		rc = 0;
		goto done;
	}
	if (cli.tuning_db && use_tuning_db(&cli, err))
		goto fail;
	if (strcmp(cli.emit, "targets") == 0) {
		text = targets_mk(&cli, &len, err);
		if (!text)
			goto fail;
		goto write;
	}
	/* Render first: a spec the templates refuse gets no name either. */
	if (mhagen_generate(&cli.spec, strcmp(cli.emit, "exp") ? "kernel" : "exp",
	                    cli.template_dir, &text, &len, err))
		goto fail;
	if (strcmp(cli.emit, "kernel") && strcmp(cli.emit, "exp")) {
		free(text);
		text = NULL;
		if (strcmp(cli.emit, "name") == 0) {
			len = strlen(cli.spec.name) + 1;
			text = malloc(len + 1);
			if (text)
				snprintf(text, len + 1, "%s\n", cli.spec.name);
			else
				mhagen_fail(err, "out of memory");
		} else if (mhagen_generate(&cli.spec, cli.emit, cli.template_dir,
		                           &text, &len, err)) {
			text = NULL;
		}
		if (!text)
			goto fail;
	}
	if (cli.header && mhagen_generate(&cli.spec, "header", cli.template_dir,
	                                  &header, &hlen, err))
		goto fail;
write:
	if (cli.depfile && !(deps = deps_text(&cli, &dlen, err)))
		goto fail;
	/* Everything is rendered; stage every file, then put them in place. */
	if (cli.header && stage(&hdr, cli.header, header, hlen, err))
		goto fail;
	if (cli.out && stage(&out, cli.out, text, len, err))
		goto fail;
	if (cli.depfile && stage(&dep, cli.depfile, deps, dlen, err))
		goto fail;
	if (cli.header && commit(&hdr, err))
		goto fail;
	if (cli.out) {
		if (commit(&out, err) || (cli.depfile && commit(&dep, err)))
			goto fail;
	} else if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
		mhagen_fail(err, "cannot write to standard output: %s",
		            strerror(errno));
		goto fail;
	}
	rc = 0;
	goto done;
fail:
	unstage(&hdr);
	unstage(&out);
	unstage(&dep);
	fprintf(stderr, "mhagen: %s\n", err);
done:
	free(text);
	free(header);
	free(deps);
	mhagen_deps_free(&template_reads);
	return rc;
}
