/* The command lines the spec and cli tests share. */
#include "cases.h"

#include <string.h>



int cases_parse(struct mhagen_cli *cli, const struct args *a, char *err)
{
	char *argv[MAXARG + 2] = {"mhagen"};
	int argc = 1;

	for (int i = 0; a->v[i]; ++i)
		argv[argc++] = (char *)a->v[i];
	err[0] = '\0';
	return mhagen_parse_args(cli, argc, argv, err);
}

void cases_parse_ok(struct mhagen_cli *cli, const struct args *a)
{
	char err[MHAGEN_ERR];

	cr_assert_eq(cases_parse(cli, a, err), 0, "%s rejected: %s", a->v[0], err);
}


const struct bad bad_cases[] = {
	/* not numbers */
	{{{"--h", "abc", "--dk", "64"}}, "--h: 'abc' is not a whole number"},
	{{{"--h", "8", "--dk", "12x"}}, "--dk: '12x'"},
	{{{"--h", "+8", "--dk", "64"}}, "--h: '+8'"},
	{{{"--h", "8 ", "--dk", "64"}}, "--h: '8 '"},
	{{{"--h", "", "--dk", "64"}}, "--h: '' is not a whole number"},
	{{{"--h", "0x10", "--dk", "64"}}, "--h: '0x10'"},
	{{{"--h", "8.0", "--dk", "64"}}, "--h: '8.0'"},
	{{{HD, "--seq", "1e3"}}, "--seq: '1e3'"},
	/* zero, negative */
	{{{"--h", "0", "--dk", "64"}}, "--h: 0 is out of range"},
	{{{"--h", "8", "--dk", "-64"}}, "--dk: -64 is out of range"},
	{{{HD, "--window", "0"}}, "--window: 0 is out of range"},
	{{{HD, "--seq-kv", "0"}}, "--seq-kv: 0 is out of range"},
	{{{HD, "--seq", "-1"}}, "--seq: -1 is out of range"},
	{{{HD, "--kv-heads", "0"}}, "--kv-heads: 0 is out of range"},
	{{{HD, "--unroll-max", "-1"}}, "--unroll-max: -1 is out of range"},
	{{{HD, "--block-q", "0"}}, "--block-q: 0 is out of range"},
	/* overflowing */
	{{{"--h", BIG, "--dk", "64"}}, "--h: " BIG " is out of range"},
	{{{"--h", "8", "--dk", "-" BIG}}, "--dk: -" BIG " is out of range"},
	{{{HD, "--seq", BIG}}, "--seq: " BIG " is out of range"},
	{{{HD, "--seq-kv", "18446744073709551617"}},
	 "--seq-kv: 18446744073709551617 is out of range"},
	{{{HD, "--block-kv", "9223372036854775808"}},
	 "--block-kv: 9223372036854775808 is out of range"},
	{{{HD, "--window", "4294967296"}}, "--window: 4294967296 is out of range"},
	/* past the documented limits */
	{{{"--h", "1025", "--dk", "64"}}, "--h: 1025 is out of range (1 to 1024)"},
	{{{"--h", "8", "--dk", "4097"}}, "--dk: 4097 is out of range (1 to 4096)"},
	{{{HD, "--dv", "4097"}}, "--dv: 4097 is out of range"},
	{{{HD, "--kv-heads", "1025"}}, "--kv-heads: 1025 is out of range"},
	{{{HD, "--seq", "16777217"}}, "--seq: 16777217 is out of range"},
	{{{HD, "--seq-kv", "16777217"}}, "--seq-kv: 16777217 is out of range"},
	{{{HD, "--block-q", "1025"}}, "--block-q: 1025 is out of range"},
	{{{HD, "--block-kv", "4"}}, "--block-kv: 4 is out of range"},
	{{{HD, "--mq", "65"}}, "--mq: 65 is out of range"},
	{{{HD, "--nk", "17"}}, "--nk: 17 is out of range"},
	{{{HD, "--nv", "17"}}, "--nv: 17 is out of range"},
	{{{HD, "--unroll-max", "4097"}}, "--unroll-max: 4097 is out of range"},
	{{{HD, "--name", "a23456789012345678901234567890123456789012345678901234567890"
	   "12345678901234567890123456789012345678901234567890123456789012345678"}},
	 "--name: 'a2345"},
	/* unknown words and flags */
	{{{HD, "--frobnicate", "1"}}, "unknown flag '--frobnicate'"},
	{{{HD, "--h=8"}}, "unknown flag '--h=8'"},
	{{{HD, "-x", "1"}}, "unexpected argument '-x'"},
	{{{HD, "kernel.c"}}, "unexpected argument 'kernel.c'"},
	{{{HD, "--target", ""}}, "--target: unknown target ''"},
	{{{HD, "--target", "AVX2"}}, "--target: unknown target 'AVX2'"},
	{{{HD, "--mask", "diagonal"}}, "--mask: unknown mask 'diagonal'"},
	{{{HD, "--mask", "causal,"}}, "--mask: unknown mask '' in 'causal,'"},
	{{{HD, "--mask", "none,causal"}}, "--mask: unknown mask 'none'"},
	{{{HD, "--mask", ""}}, "--mask: unknown mask '' in ''"},
	{{{HD, "--layout", "hbsd"}}, "--layout: unknown value 'hbsd'"},
	{{{HD, "--packed", "qk"}}, "--packed: unknown value 'qk'"},
	{{{HD, "--packed", "kv", "--layout", "bhsd"}},
	 "--packed kv: packed rows are positions of [batch][seq] or "
	 "[seq][batch]; use --layout bshd or sbhd, not bhsd"},
	{{{HD, "--packed", "qkv", "--dv", "32"}},
	 "--packed qkv: q, k and v share one head dim; --dv 32 differs from "
	 "--dk 64"},
	{{{HD, "--packed", "qkv", "--seq", "16", "--seq-kv", "32"}},
	 "--packed qkv: keys lie at the queries' positions"},
	{{{HD, "--packed", "qkv", "--seq-kv", "32"}},
	 "--packed qkv: keys lie at the queries' positions"},
	{{{HD, "--varlen", "ragged"}}, "--varlen: unknown value 'ragged'"},
	{{{HD, "--varlen", "padded", "--mask", "causal,padding"}},
	 "--varlen padded: reads each sequence's keys from kv_len already; "
	 "drop padding from --mask"},
	{{{HD, "--varlen", "packed", "--layout", "bhsd"}},
	 "--varlen packed: sequences are rows [total][heads][d] one after "
	 "another; --layout bhsd does not apply (bshd only)"},
	{{{HD, "--varlen", "packed", "--layout", "sbhd"}},
	 "--layout sbhd does not apply (bshd only)"},
	{{{HD, "--varlen", "packed", "--packed", "kv"}},
	 "--varlen packed: not with --packed kv"},
	{{{HD, "--varlen", "packed", "--mask", "causal,bias"}},
	 "--varlen packed: the bias and the boolean mask are padded "
	 "[seq_q][seq_kv] planes; use --varlen padded, or --mask keys"},
	{{{HD, "--varlen", "packed", "--mask", "bool"}},
	 "--varlen packed: the bias and the boolean mask"},
	{{{HD, "--varlen", "packed", "--weights"}},
	 "--varlen packed: no --weights"},
	{{{HD, "--causal-align", "middle"}},
	 "--causal-align: unknown value 'middle'"},
	{{{HD, "--emit", "assembly"}}, "--emit: unknown value 'assembly'"},
	{{{HD, "--algo", "sideways"}}, "--algo: unknown value 'sideways'"},
	{{{HD, "--exp", "quick"}}, "--exp: unknown value 'quick'"},
	{{{HD, "--threads", "pthreads"}}, "--threads: unknown value 'pthreads'"},
	{{{HD, "--nv", "17"}}, "--nv: 17 is out of range"},
	{{{HD, "--weights", "--weights"}}, "--weights is given twice"},
	{{{HD, "--weights", "yes"}}, "unexpected argument 'yes'"},
	{{{HD, "--name", "9lives"}}, "--name: '9lives' is not a C identifier"},
	{{{HD, "--name", "my-kernel"}}, "--name: 'my-kernel'"},
	/* repeated and conflicting */
	{{{HD, "--h", "16"}}, "--h is given twice ('8', then '16')"},
	{{{HD, "--dk", "64"}}, "--dk is given twice ('64', then '64')"},
	{{{HD, "--mask", "causal", "--mask", "padding"}},
	 "--mask is given twice ('causal', then 'padding')"},
	{{{HD, "-o", "a.c", "-o", "b.c"}}, "-o is given twice ('a.c', then 'b.c')"},
	{{{HD, "--spec", "a.spec", "--spec", "b.spec"}},
	 "--spec is given twice ('a.spec', then 'b.spec')"},
	{{{HD, "--mask", "causal,padding,causal"}},
	 "--mask: 'causal,padding,causal' names causal twice"},
	{{{HD, "-o", ""}}, "-o needs a non-empty value"},
	{{{HD, "--kv-heads", "3"}}, "--kv-heads: 3 does not divide --h 8"},
	{{{"--h", "12", "--dk", "64", "--kv-heads", "8"}},
	 "--kv-heads: 8 does not divide --h 12"},
	{{{HD, "--causal-align", "top-left"}},
	 "--causal-align: needs a causal --mask"},
	{{{HD, "--mask", "padding", "--causal-align", "top-left"}},
	 "--causal-align: needs a causal --mask"},
	{{{HD, "--block-kv", "12"}}, "--block-kv: 12 is not a multiple of 8"},
	/* missing */
	{{{"--dk", "64"}}, "--h is required"},
	{{{"--h", "8"}}, "--dk is required"},
	{{{"--h", "8", "--dk"}}, "--dk needs a value"},
	{{{HD, "--spec"}}, "--spec needs a value"},
	/* scale */
	{{{HD, "--scale", "nan"}}, "--scale: nan must be a positive finite number"},
	{{{HD, "--scale", "-nan"}}, "--scale: -nan"},
	{{{HD, "--scale", "-1"}}, "--scale: -1 must be a positive"},
	{{{HD, "--scale", "-0.125"}}, "--scale: -0.125"},
	{{{HD, "--scale", "0"}}, "--scale: 0 must be a positive"},
	{{{HD, "--scale", "inf"}}, "--scale: inf"},
	{{{HD, "--scale", "-inf"}}, "--scale: -inf"},
	{{{HD, "--scale", "1e400"}}, "--scale: 1e400"},
	{{{HD, "--scale", "1e-400"}}, "--scale: 1e-400"},
	{{{HD, "--scale", "0.5x"}}, "--scale: '0.5x' is not a number"},
	{{{HD, "--scale", ""}}, "--scale: '' is not a number"},
	/* score modifiers */
	{{{HD, "--softcap", "0"}}, "--softcap: 0 must be a positive finite number"},
	{{{HD, "--softcap", "-30"}}, "--softcap: -30 must be a positive"},
	{{{HD, "--softcap", "inf"}}, "--softcap: inf"},
	{{{HD, "--softcap", "30x"}}, "--softcap: '30x' is not a number"},
	{{{HD, "--max-bias", "-8"}}, "--max-bias: -8 must be a positive"},
	{{{HD, "--alibi", "--max-bias", "8"}},
	 "--max-bias: fixes the ALiBi slopes, --alibi takes them from the "
	 "caller; give one of them"},
	{{{HD, "--sinks", "--sinks"}}, "--sinks is given twice"},
	{{{HD, "--lse", "--lse"}}, "--lse is given twice"},
	/* windows by position: -1 is an unbounded side, below it an error */
	{{{HD, "--window-left", "-2"}},
	 "--window-left: -2 is out of range (0 to 16777216, or -1 for unbounded)"},
	{{{HD, "--window-right", "-5"}}, "--window-right: -5 is out of range"},
	{{{HD, "--window-right", "16777217"}},
	 "--window-right: 16777217 is out of range"},
	{{{HD, "--window-left", "2x"}}, "--window-left: '2x' is not a whole number"},
	{{{HD, "--mask", "causal,keys", "--mask-dims", "b"}},
	 "--mask-dims: shapes the bias and the boolean mask, and --mask has "
	 "neither"},
	{{{HD, "--mask", "bias", "--mask-dims", "h,b"}},
	 "--mask-dims: unknown value 'h,b'"},
	{{{HD, "--mask", "bool,boolean"}}, "--mask: unknown mask 'boolean'"},
	{{{HD, "--window", "4", "--window-left", "3"}},
	 "--window-left: --window N counts N keys back from a row's causal "
	 "limit; give it or --window-left/--window-right, not both"},
	{{{HD, "--mask", "causal", "--window-right", "2", "--window", "4"}},
	 "--window-right: --window N counts"},
	{{{HD, "--window-left", "1", "--window-left", "2"}},
	 "--window-left is given twice"},
	{{{HD, "--alibi", "maybe"}}, "unexpected argument 'maybe'"},
	/* spec files */
	{{{"--spec", FIX "missing.spec"}},
	 "--spec: cannot open '" FIX "missing.spec'"},
	{{{"--spec", FIX}}, "--spec: cannot read '" FIX "'"},
	{{{"--spec", "/dev/zero"}}, "--spec: '/dev/zero' is too large"},
	{{{"--spec", FIX "binary.spec"}},
	 "--spec: '" FIX "binary.spec' is not a text file"},
	{{{"--spec", FIX "unknown_key.spec"}},
	 FIX "unknown_key.spec:3: unknown setting 'heads'"},
	{{{"--spec", FIX "no_equals.spec"}},
	 FIX "no_equals.spec:2: expected 'key = value', got 'dk 64'"},
	{{{"--spec", FIX "repeated.spec"}},
	 FIX "repeated.spec:3: --h is given twice (again as '16')"},
	{{{"--spec", FIX "overflow.spec"}},
	 FIX "overflow.spec:2: --dk: " BIG " is out of range"},
	{{{"--spec", FIX "nan_scale.spec"}},
	 FIX "nan_scale.spec:3: --scale: nan must be a positive finite number"},
	{{{"--spec", FIX "long_line.spec"}},
	 FIX "long_line.spec:2: line too long"},
	{{{"--spec", FIX "kv_heads.spec"}}, "--kv-heads: 5 does not divide --h 12"},
	{{{"--spec", FIX "good.spec", "--kv-heads", "3"}},
	 "--kv-heads: 3 does not divide --h 8"},
	{{{HD, "--kv-dtype", "f8"}},
	 "--kv-dtype: unknown value 'f8' (f32, f16, bf16 or q8)"},
	{{{"--h", "2", "--dk", "48", "--kv-dtype", "q8"}},
	 "--kv-dtype q8: blocks of 32 elements along each key and value row "
	 "(ggml's q8_0), so --dk (48) and --dv (48) are multiples of 32"},
	{{{"--h", "2", "--dk", "64", "--dv", "40", "--kv-dtype", "q8"}},
	 "so --dk (64) and --dv (40) are multiples of 32"},
	{{{"--embed", "192", "--h", "4", "--kv-cache", "64", "--kv-dtype", "q8"}},
	 "--kv-dtype q8: blocks of 32 elements along each key and value row "
	 "(ggml's q8_0), so --dk (48) and --dv (48) are multiples of 32"},
	{{{"--h", "2", "--dk", "8", "--seq", "9", "--packed", "qkv",
	   "--kv-dtype", "f16"}},
	 "--kv-dtype f16: not with --packed qkv (q is f32, in the same "
	 "rows as k and v); use --packed kv, or --dtype for all three"},
	{{{"--h", "2", "--dk", "32", "--seq", "9", "--packed", "qkv",
	   "--dtype", "bf16", "--kv-dtype", "q8"}},
	 "--kv-dtype q8: not with --packed qkv (q is bf16"},
	{{{HD, "--dtype", "q8"}},
	 "--dtype: unknown value 'q8' (f32, f16 or bf16; q8 stores only keys "
	 "and values: --kv-dtype q8)"},
	{{{HD, "--dtype", "f64"}}, "--dtype: unknown value 'f64'"},
	{{{"--embed", "64", "--h", "8", "--dtype", "f16"}},
	 "--dtype f16: a layer's inputs, weights and outputs are floats; "
	 "--kv-dtype stores its KV cache"},
	/* the layer (--embed): its axes once, what it does not carry yet */
	{{{"--embed", "770", "--h", "12"}},
	 "--embed: 770 is not divisible by --h 12 (each head takes embed / h)"},
	{{{"--embed", "0", "--h", "1"}}, "--embed: 0 is out of range (1 to 65536)"},
	{{{"--embed", "8192", "--h", "1"}},
	 "--embed: heads of 8192 / 1 = 8192 floats exceed the head dim limit 4096"},
	{{{"--embed", "64"}}, "--h is required"},
	{{{"--embed", "64", "--h", "8", "--kdim", "32"}},
	 "--kdim: self-attention's keys and values are the query's rows; add "
	 "--cross"},
	{{{"--embed", "64", "--h", "8", "--vdim", "32"}}, "--vdim: self-attention's"},
	{{{"--embed", "64", "--h", "8", "--seq", "4", "--seq-kv", "9"}},
	 "--seq-kv: self-attention's keys"},
	{{{HD, "--kdim", "32"}}, "--kdim: a layer's setting; needs --embed E"},
	{{{HD, "--cross"}}, "--cross: a layer's setting; needs --embed E"},
	{{{HD, "--proj-bias", "false"}}, "--proj-bias: a layer's setting"},
	{{{"--embed", "64", "--h", "8", "--dk", "8"}},
	 "--dk: a layer's heads are --embed / --h wide"},
	{{{"--embed", "64", "--h", "8", "--dv", "4"}}, "--dv: a layer's heads are --embed / --h wide; drop --dv"},
	{{{"--embed", "64", "--h", "8", "--kv-heads", "3"}}, "--kv-heads: 3 does not divide --h 8"},
	{{{"--embed", "64", "--h", "8", "--layout", "bhsd"}},
	 "--layout bhsd: a layer's inputs are rows of E floats"},
	{{{"--embed", "64", "--h", "8", "--lse"}},
	 "--lse: not with --embed (the layer does not carry it yet)"},
	{{{"--embed", "64", "--h", "8", "--packed", "qkv"}}, "--packed: not with --embed"},
	{{{"--embed", "64", "--h", "8", "--varlen", "padded"}}, "--varlen: not with --embed"},
	{{{"--embed", "64", "--h", "8", "--kv-dtype", "f16"}},
	 "--kv-dtype f16: a layer stores k and v only in its KV cache; add "
	 "--kv-cache N"},
	{{{HD, "--add-bias-kv"}}, "--add-bias-kv: a layer's setting; needs --embed E"},
	{{{HD, "--add-zero-attn"}}, "--add-zero-attn: a layer's setting"},
	{{{"--embed", "64", "--h", "8", "--kv-cache", "64", "--add-zero-attn"}},
	 "--add-zero-attn: not with --kv-cache"},
	/* the decoder step (--kv-cache) */
	{{{HD, "--kv-cache", "64"}}, "--kv-cache: a layer's setting; needs --embed E"},
	{{{"--embed", "64", "--h", "8", "--kv-cache", "0"}}, "--kv-cache"},
	{{{"--embed", "64", "--h", "8", "--kv-cache", "64", "--cross"}},
	 "--kv-cache: the decoder step is self-attention"},
	{{{"--embed", "64", "--h", "8", "--kv-cache", "64", "--layout", "sbhd"}},
	 "--kv-cache: the step's inputs and cache are [batch][seq][E] rows"},
	{{{"--embed", "64", "--h", "8", "--kv-cache", "64", "--mask", "causal,keys"}},
	 "--kv-cache: the step is causal over the cache's lengths (cache_len); "
	 "--mask takes only causal here"},
	{{{"--embed", "64", "--h", "8", "--kv-cache", "64", "--mask", "causal",
	   "--causal-align", "top-left"}},
	 "--causal-align top-left: the step's new tokens follow the cache"},
	{{{"--embed", "64", "--h", "8", "--kv-cache", "64", "--seq-kv", "64"}},
	 "--seq-kv: the step's keys are the cache's positions"},
	{{{"--embed", "64", "--h", "8", "--kv-cache", "64", "--weights"}},
	 "--weights: not with --kv-cache"},
	{{{"--embed", "64", "--h", "8", "--kv-cache", "8", "--seq", "9"}},
	 "--seq 9: more new tokens than the cache holds (--kv-cache 8)"},
	{{{"--embed", "64", "--h", "8", "--target", "avx2,scalar"}},
	 "--target avx2,scalar: a layer takes one target"},
	{{{"--embed", "64", "--h", "8", "--proj-bias", "no"}},
	 "unexpected argument 'no'"},
	/* --target native reads the target tables of the template dir */
	{{{HD, "--template-dir", "tests/fixtures/no-such-dir"}},
	 "cannot read template 'tests/fixtures/no-such-dir/main.lua'"},
	{{{HD, "--template-dir", "tests/fixtures/broken-runtime"}},
	 "cannot list targets in 'tests/fixtures/broken-runtime/targets/'"},
};

const size_t nbad_cases = COUNT(bad_cases);
