/* The spec parser and validator: flags fill the spec, defaults and
 * canonical names, one clear message per bad input. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../generator/gen.h"
#include "../generator/spec.h"
#include "../runtime/mha_abi.h"
#include "../runtime/mha_cpu.h"
#include "cases.h"

Test(spec, defaults)
{
	struct mhagen_cli c;
	struct mhagen_target t[MHAGEN_TARGETS_MAX];
	struct mha_spec native;
	char err[MHAGEN_ERR];
	const char *best = native.target;
	size_t n;

	mha_spec_init(&native);
	cr_assert_eq(mhagen_resolve_target(&native, NULL, err), 0, "%s", err);
	cr_assert_eq(mhagen_targets(NULL, t, MHAGEN_TARGETS_MAX, &n, err), 0,
	             "%s", err);

	cases_parse_ok(&c, &(struct args){{"--h", "8", "--dk", "64", "--seq", "128"}});
	cr_assert_eq(c.spec.h, 8);
	cr_assert_eq(c.spec.kv_heads, 8, "kv_heads defaults to h");
	cr_assert_eq(c.spec.dk, 64);
	cr_assert_eq(c.spec.dv, 64, "dv defaults to dk");
	cr_assert_eq(c.spec.seq_q, 128);
	cr_assert_eq(c.spec.seq_kv, 128, "seq_kv defaults to --seq");
	cr_assert_eq(c.spec.mask, 0u);
	cr_assert_eq(c.spec.align, MHA_ALIGN_BOTTOM_RIGHT);
	cr_assert_eq(c.spec.layout, MHA_LAYOUT_BSHD);
	cr_assert_eq(c.spec.scale, 0.0);
	cr_assert_eq(c.spec.block_kv, 0, "unset knobs: the target's default");
	cr_assert_eq(c.spec.block_q + c.spec.mq + c.spec.nk + c.spec.nv, 0);
	cr_assert_eq(c.spec.algo + c.spec.exp + c.spec.threads, 0);
	cr_assert_eq(c.spec.unroll_max, 128);
	cr_assert_eq(c.spec.kv_split, 0);
	cr_assert_not_null(mhagen_target_find(t, n, best), "best target '%s'",
	                   best);
	cr_assert(mha_cpu_has(mhagen_target_find(t, n, best)->cpu),
	          "this CPU runs %s", best);
	for (size_t i = 0; i < n; ++i)
		cr_assert(!mha_cpu_has(t[i].cpu) ||
		          t[i].rank <= mhagen_target_find(t, n, best)->rank,
		          "%s runs here and ranks above %s", t[i].name, best);
	cr_assert_str_eq(c.spec.target, best, "no --target means native");
	cr_assert_null(c.out);
	cr_assert_null(c.header);
	cr_assert_null(c.template_dir);
	cr_assert_str_eq(c.emit, "kernel");
	cr_assert_eq(c.help + c.version, 0);
	cases_parse_ok(&c, &(struct args){{"--h", "2", "--dk", "8", "--target", "native"}});
	cr_assert_str_eq(c.spec.target, best, "--target native is resolved");
	cr_assert_eq(c.spec.seq_q, 0, "no --seq: dynamic");
	cr_assert_eq(c.spec.seq_kv, 0);
}

Test(spec, every_flag)
{
	struct mhagen_cli c;

	cases_parse_ok(&c, &(struct args){{"--h", "16", "--kv-heads", "4", "--dk", "80",
		"--dv", "96", "--seq", "7", "--seq-kv", "300", "--mask", "padding,causal",
		"--causal-align", "top-left", "--layout", "bhsd", "--scale", "0.25"}});
	cr_assert_eq(c.spec.kv_heads, 4);
	cr_assert_eq(c.spec.dv, 96);
	cr_assert_eq(c.spec.seq_q, 7);
	cr_assert_eq(c.spec.seq_kv, 300);
	cr_assert_eq(c.spec.mask, (unsigned)(MHA_MASK_CAUSAL | MHA_MASK_PADDING));
	cr_assert_eq(c.spec.align, MHA_ALIGN_TOP_LEFT);
	cr_assert_eq(c.spec.layout, MHA_LAYOUT_BHSD);
	cr_assert_eq(c.spec.scale, 0.25);
	cases_parse_ok(&c, &(struct args){{"--h", "1", "--dk", "1", "--target", "neon",
		"--name", "my_kernel2", "--block-kv", "32", "--unroll-max", "0",
		"-o", "k.c", "--header", "k.h", "--template-dir", "tpl", "--emit", "exp",
		"--mask", "padding"}});
	cr_assert_str_eq(c.spec.target, "neon");
	cr_assert_str_eq(c.spec.name, "my_kernel2");
	cr_assert_eq(c.spec.block_kv, 32);
	cr_assert_eq(c.spec.unroll_max, 0, "an explicit 0 is kept");
	cr_assert_eq(c.spec.mask, (unsigned)MHA_MASK_PADDING);
	cr_assert_str_eq(c.out, "k.c");
	cr_assert_str_eq(c.header, "k.h");
	cr_assert_str_eq(c.template_dir, "tpl");
	cr_assert_str_eq(c.emit, "exp");
	cases_parse_ok(&c, &(struct args){{"--version"}});
	cr_assert_eq(c.version, 1, "--version needs no spec");
	cases_parse_ok(&c, &(struct args){{"-h"}});
	cr_assert_eq(c.help, 1);
}

/* One canonical-name case: flags and the name they must give. */
struct named {
	struct args a;
	const char *name;
};

static const struct named named_cases[] = {
	{{{"--h", "8", "--dk", "64", "--seq", "128", "--mask", "causal",
	   "--target", "avx2"}}, "mha_f32_h8_dk64_s128_causal__avx2"},
	{{{"--h", "8", "--dk", "64", "--target", "scalar"}},
	 "mha_f32_h8_dk64__scalar"},
	{{{"--h", "8", "--dk", "64", "--seq", "1", "--seq-kv", "100",
	   "--mask", "padding", "--target", "neon"}},
	 "mha_f32_h8_dk64_q1_kv_s100_padding__neon"},
	{{{"--h", "4", "--dk", "32", "--seq-kv", "77", "--target", "avx2"}},
	 "mha_f32_h4_dk32_kv_s77__avx2"},
	{{{"--h", "4", "--dk", "32", "--seq", "9", "--seq-kv", "9",
	   "--target", "avx2"}}, "mha_f32_h4_dk32_s9__avx2"},
	{{{"--h", "32", "--kv-heads", "8", "--dk", "128", "--dv", "64",
	   "--target", "avx2"}}, "mha_f32_h32_kv8_dk128_dv64__avx2"},
	{{{"--h", "2", "--dk", "16", "--mask", "padding,causal",
	   "--causal-align", "top-left", "--layout", "bhsd", "--target",
	   "scalar"}}, "mha_f32_h2_dk16_causal_tl_padding_bhsd__scalar"},
	{{{"--h", "2", "--dk", "16", "--scale", "0.125", "--block-kv", "128",
	   "--unroll-max", "32", "--target", "neon"}},
	 "mha_f32_h2_dk16_sc3e000000_bk128_um32__neon"},
	{{{"--h", "2", "--dk", "16", "--mask", "none", "--causal-align",
	   "bottom-right", "--target", "scalar"}}, "mha_f32_h2_dk16__scalar"},
	{{{"--h", "2", "--dk", "16", "--threads", "openmp", "--exp", "fast",
	   "--nv", "4", "--mq", "16", "--block-q", "32", "--algo", "rows",
	   "--target", "avx2"}},
	 "mha_f32_h2_dk16_rows_bq32_mq16_nv4_fast_openmp__avx2"},
	{{{"--h", "2", "--dk", "16", "--name", "mine", "--target", "scalar"}},
	 "mine"},
	{{{"--h", "2", "--dk", "16", "--window", "4", "--layout", "bhsd",
	   "--scale", "0.125", "--weights", "--algo", "rows", "--target",
	   "neon"}}, "mha_f32_h2_dk16_w4_bhsd_sc3e000000_weights_rows__neon"},
	{{{"--h", "2", "--dk", "16", "--weights", "false", "--target",
	   "scalar"}}, "mha_f32_h2_dk16__scalar"},
	{{{"--h", "2", "--dk", "16", "--layout", "sbhd", "--target",
	   "avx2"}}, "mha_f32_h2_dk16_sbhd__avx2"},
	{{{"--h", "4", "--kv-heads", "2", "--dk", "16", "--seq", "9",
	   "--packed", "qkv", "--layout", "sbhd", "--target", "avx2"}},
	 "mha_f32_h4_kv2_dk16_s9_sbhd_qkvpacked__avx2"},
	{{{"--h", "2", "--dk", "16", "--dv", "8", "--packed", "kv",
	   "--target", "scalar"}}, "mha_f32_h2_dk16_dv8_kvpacked__scalar"},
	{{{"--h", "2", "--dk", "16", "--packed", "none", "--target",
	   "scalar"}}, "mha_f32_h2_dk16__scalar"},
	{{{"--h", "2", "--dk", "16", "--varlen", "padded", "--mask", "causal",
	   "--target", "avx2"}}, "mha_f32_h2_dk16_causal_varlen__avx2"},
	{{{"--h", "4", "--kv-heads", "2", "--dk", "16", "--seq", "9",
	   "--varlen", "packed", "--lse", "--target", "scalar"}},
	 "mha_f32_h4_kv2_dk16_s9_varlenpacked_lse__scalar"},
	{{{"--h", "2", "--dk", "16", "--varlen", "none", "--target",
	   "scalar"}}, "mha_f32_h2_dk16__scalar"},
	/* the storage of k and v, right after the tensors' f32 */
	{{{"--h", "32", "--kv-heads", "8", "--dk", "128", "--seq", "1",
	   "--seq-kv", "2048", "--kv-dtype", "f16", "--target", "avx2"}},
	 "mha_f32_f16kv_h32_kv8_dk128_q1_kv_s2048__avx2"},
	{{{"--h", "2", "--dk", "16", "--kv-dtype", "bf16", "--packed", "kv",
	   "--target", "neon"}}, "mha_f32_bf16kv_h2_dk16_kvpacked__neon"},
	{{{"--h", "2", "--dk", "16", "--kv-dtype", "f32", "--target",
	   "scalar"}}, "mha_f32_h2_dk16__scalar"},
	{{{"--h", "2", "--dk", "16", "--weights", "true", "--mask", "causal",
	   "--target", "scalar"}}, "mha_f32_h2_dk16_causal_weights__scalar"},
	/* score modifiers: numbers as their float's bits */
	{{{"--h", "2", "--dk", "16", "--sinks", "--softcap", "30", "--alibi",
	   "--weights", "--target", "scalar"}},
	 "mha_f32_h2_dk16_cap41f00000_alibi_sinks_weights__scalar"},
	{{{"--h", "2", "--dk", "16", "--weights", "--lse", "--sinks", "--target",
	   "scalar"}}, "mha_f32_h2_dk16_sinks_lse_weights__scalar"},
	{{{"--h", "2", "--dk", "16", "--max-bias", "8", "--mask", "causal",
	   "--target", "avx2"}}, "mha_f32_h2_dk16_causal_mb41000000__avx2"},
	/* windows by position: a side -1 is no side; causal drops the right */
	{{{"--h", "2", "--dk", "16", "--window-left", "3", "--window-right", "0",
	   "--target", "scalar"}}, "mha_f32_h2_dk16_wl3_wr0__scalar"},
	{{{"--h", "2", "--dk", "16", "--window-right", "5", "--window-left",
	   "-1", "--target", "scalar"}}, "mha_f32_h2_dk16_wr5__scalar"},
	{{{"--h", "2", "--dk", "16", "--window-left", "-1", "--window-right",
	   "-1", "--target", "scalar"}}, "mha_f32_h2_dk16__scalar"},
	{{{"--h", "2", "--dk", "16", "--mask", "causal", "--causal-align",
	   "top-left", "--window-left", "7", "--window-right", "4", "--target",
	   "avx2"}}, "mha_f32_h2_dk16_causal_tl_wl7__avx2"},
};

ParameterizedTestParameters(spec, canonical_name)
{
	return params_index(COUNT(named_cases));
}

ParameterizedTest(int *i, spec, canonical_name)
{
	const struct named *n = &named_cases[*i];
	struct mhagen_cli c;
	char buf[MHAGEN_NAME_MAX];

	cases_parse_ok(&c, &n->a);
	cr_assert_str_eq(c.spec.name, n->name);
	mha_spec_canonical_name(&c.spec, buf, sizeof buf);
	if (strcmp(n->name, "mine") == 0)
		cr_assert_str_eq(buf, "mha_f32_h2_dk16__scalar",
		                 "--name leaves the canonical name alone");
	else
		cr_assert_str_eq(buf, n->name);
}

/* mha_spec_command's flags parse back to the same spec. */
Test(spec, command_round_trip)
{
	struct mhagen_cli c, back;
	char cmd[1024], err[MHAGEN_ERR];
	char *argv[64];
	int argc = 0;

	cases_parse_ok(&c, &(struct args){{"--h", "12", "--kv-heads", "3", "--dk", "40",
		"--dv", "24", "--seq", "5", "--seq-kv", "50", "--mask", "causal,padding",
		"--causal-align", "top-left", "--layout", "bhsd", "--scale", "0.3",
		"--weights", "--block-kv", "16", "--softcap", "30", "--sinks",
		"--lse", "--max-bias", "8", "--target", "scalar"}});
	mha_spec_command(&c.spec, cmd, sizeof cmd);
	cr_assert(strncmp(cmd, "mhagen --h 12 --kv-heads 3 --dk 40", 34) == 0,
	          "command: %s", cmd);
	for (char *t = strtok(cmd, " "); t && argc < 63; t = strtok(NULL, " "))
		argv[argc++] = t;
	cr_assert_eq(mhagen_parse_args(&back, argc, argv, err), 0, "%s", err);
	cr_assert_str_eq(back.spec.name, c.spec.name);
	cr_assert_eq(back.spec.scale, (double)(float)0.3);
	cr_assert_eq(back.spec.weights, 1);
}

Test(spec, spec_text)
{
	struct mha_spec s;
	char err[MHAGEN_ERR];

	mha_spec_init(&s);
	cr_assert_eq(mha_spec_parse_text(&s, "# c\n\n\th=16 # x\r\n dk =  80\n"
		"mask = causal,padding\nname = a_b\n", "t.spec", err), 0, "%s", err);
	cr_assert_eq(mha_spec_finish(&s, err), 0, "%s", err);
	cr_assert_eq(s.h, 16);
	cr_assert_eq(s.dk, 80);
	cr_assert_eq(s.mask, (unsigned)(MHA_MASK_CAUSAL | MHA_MASK_PADDING));
	cr_assert_str_eq(s.name, "a_b");
	mha_spec_init(&s);
	cr_assert_eq(mha_spec_parse_text(&s, "h = 8\n\n# dk\nkv_heads = 2\n",
	                                 "t.spec", err), -1);
	cr_assert_str_eq(err, "t.spec:4: unknown setting 'kv_heads'");
	mha_spec_init(&s);
	cr_assert_eq(mha_spec_set(&s, "dk", "64", err), 0);
	cr_assert_eq(mha_spec_set(&s, "dk", "64", err), -1);
	cr_assert_str_eq(err, "--dk is given twice (again as '64')");
	/* weights is a switch on the command line, true or false in files */
	mha_spec_init(&s);
	cr_assert_eq(mha_spec_parse_text(&s, "h = 2\ndk = 8\nweights = true\n",
	                                 "t.spec", err), 0, "%s", err);
	cr_assert_eq(s.weights, 1);
	mha_spec_init(&s);
	cr_assert_eq(mha_spec_parse_text(&s, "weights = false\n", "t.spec", err),
	             0, "%s", err);
	cr_assert_eq(s.weights, 0);
	mha_spec_init(&s);
	cr_assert_eq(mha_spec_parse_text(&s, "h = 2\nweights = yes\n", "t.spec",
	                                 err), -1);
	cr_assert_str_eq(err, "t.spec:2: --weights: 'yes' is not true or false");
}

ParameterizedTestParameters(spec, rejects)
{
	return params_index(nbad_cases);
}

ParameterizedTest(int *i, spec, rejects)
{
	const struct bad *b = &bad_cases[*i];
	struct mhagen_cli c;
	char err[MHAGEN_ERR];

	cr_assert_eq(cases_parse(&c, &b->a, err), -1, "accepted; wanted '%s'", b->want);
	cr_assert(strstr(err, b->want), "message '%s' lacks '%s'", err, b->want);
	cr_assert_null(strchr(err, '\n'), "one line: '%s'", err);
}
