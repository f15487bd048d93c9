-- AVX2 + FMA + F16C: 8 floats per vector.  Every op returns C text.
local T = {
	name = "avx2",
	width = 8,
	vec = "__m256",
	-- vector registers (templates/main.lua sizes micro-tiles by them)
	registers = 16,
	includes = {"<immintrin.h>"},
	-- tuning defaults: the micro-tiles (mq/W x nk and mq/W x nv
	-- accumulators) fit the register file
	-- (measured: causal kernels do better with 64-key blocks, the diagonal
	-- blocks waste less)
	-- (measured: 384-row query blocks read each key and value block half as
	-- often as 192; 1.03x on h16 dk128 s1024 causal)
	-- (measured: heads of dk + dv <= 128 floats do better with 64-key
	-- blocks, whose keys and values fit the 32 KiB L1 together: 1.007-1.012x
	-- on h8 dk64 s128 and h12 dk64 s197; at dk 128, 0.99x)
	defaults = {block_kv = 128, block_kv_causal = 64, block_q = 384, mq = 16,
	            block_kv_narrow = 64, block_kv_narrow_dims = 128,
	            nk = 6, nv = 6, kv_split = 4,
	            -- (measured: the softmax's exps 6 vectors at a time, 1.03x
	            -- on h8 dk64 s128; 4: 1.025x, 8: 1.02x)
	            exp_group = 6,
	            -- and a remainder of 4 or 5 vectors 4 at a time (a block of
	            -- 64 keys leaves 4; one at a time they waited on each exp's
	            -- latency).  Against one at a time (make bench-ab, busy
	            -- host, the results the same bit for bit): h12 dk64 s197
	            -- 1.021-1.032x, s197 batch 4 1.022x, h8 dk64 s128 median of
	            -- 5 runs 1.005x, s128 batch 8 1.005x, h16 dk128 s1024
	            -- causal 1.000x
	            exp_rest = 4,
	            -- P.V takes 4 rows of weights broadcast against 3 vectors
	            -- of a value row (templates/main.lua, P.pvr) where dv is 64
	            -- or less; at dv 128 (chunks of 3, 3, 3, 3, 3 and 1 vectors)
	            -- it measured 0.986x on h16 dk128 s1024 causal
	            pv_rows = 4, pv_dv = 64,
	            -- its rows' earlier sums loaded and scaled by alpha into the
	            -- accumulators before a block's loop (templates/main.lua
	            -- P.pv_alpha_first), not added after it from sums of 0 as
	            -- on AVX-512: on AMD Zen 4 (AVX2 kernels) the latter,
	            -- against this (make bench-ab, the results within 1.2e-7):
	            -- h8 dk64 s128 batch 8 0.973/0.988x, h12 dk64 s197 batch 4
	            -- 0.980/0.985x, h8 dk64 s512 causal 0.990-0.992x (4 runs),
	            -- h12 dk64 s197 0.983-0.997x (4), s128 0.997/1.000x; on
	            -- the Intel Xeon guest it had measured 1.003-1.007x
	            pv_alpha_first = true,
	            -- the compiler unrolls the score micro-kernels' loop over
	            -- the head dim 2 times and the rows-in-lanes P.V's (dv
	            -- 128) over the block's keys 4 times (templates/tiled.c.in):
	            -- one element or key an iteration left them front-end
	            -- bound on a busy host. Measured on AMD Zen 3 against no
	            -- unroll (clang, both link orders; README, "AMD EPYC (Zen
	            -- 3)"): busy host, h16 dk128 s1024 causal the scores'
	            -- 1.03-1.05x, the P.V's 1.015-1.04x on top; quiet, the
	            -- scores' 0.999-1.006x at dk 64, the P.V's 0.998x at dk
	            -- 128. The pv_rows P.V (dv 64) is not unrolled: 4 times
	            -- (on the busy host measured only with the scores') was
	            -- quiet s128 0.993-0.995x, s128 batch 8 0.974-0.987x, h12
	            -- dk64 s197 batch 4 0.993x, h8 dk64 s512 causal 0.997x,
	            -- h12 dk64 s197 1.002x (the defaults follow the quiet
	            -- figures)
	            unroll_qk = 2, unroll_pv = 4,
	            -- on the causal diagonal each vector of a 16-row tile takes
	            -- the keys up to its own last row, the second vector's
	            -- keys past the first's in calls of 8 keys (one vector of
	            -- rows: 8 accumulators; templates/tiled.c.in NKS).  When
	            -- those calls took 6 keys and a remainder (6 or fewer
	            -- accumulators, waiting on the FMAs' latency), both
	            -- vectors taking the tile's keys won on AMD Zen 3 (h8
	            -- dk64 s512 causal 1.006x, the median of 12 runs; h16
	            -- dk128 s1024 causal 1.011-1.039x).  With 8 keys, against
	            -- both vectors taking the tile's keys, on the Intel Xeon
	            -- guest (make bench-ab, clang; the results the same bit
	            -- for bit): h8 dk64 s512 causal 1.007-1.012x in four runs,
	            -- h16 dk128 s1024 causal 1.004x twice, h32 dk128 s2048
	            -- causal 1.002x; on AMD Zen 4 (2026-12-07) s512 causal
	            -- 1.006/1.006/1.010x, h16 dk128 s1024 causal 1.003/1.002x
	            -- the layer's projections: gemm_mr rows x gemm_nv vectors
	            -- of accumulators (12 of the 16 registers); the compiler
	            -- unrolls their loop over K 4 times (templates/gemm.c.in:
	            -- one k an iteration, with a branch for its prefetch every
	            -- 4th; measured on AMD Zen 3, busy host, the projections'
	            -- speed against OpenBLAS sgemm in the same process
	            -- 0.85-1.09x before, 1.00-1.32x after)
	            gemm_mr = 6, gemm_nv = 2, unroll_gemm = 4,
	            -- prefetch what comes next in calls of 2 MiB of q, k, v
	            -- and out or more, as AVX-512 (4 before: on AMD Zen 3, 512
	            -- KiB of L2, h12 dk64 s197, 2.4 MiB, measured 0.983x quiet
	            -- while the next item's rows all came in its last block).
	            -- With them spread over the item, on AMD Zen 4 (1 MiB of
	            -- L2) against 4 MiB (make bench-ab, the kernel's bytes
	            -- edited, 601 rounds, the results the same bit for bit):
	            -- h12 dk64 s197 1.001-1.025x, median 1.011x of 8 runs; h12
	            -- dk64 s256 1.010/1.031x; h16 dk64 s128 (2 MiB)
	            -- 1.000/1.003x; h8 dk128 s256 causal 0.997/1.001x; h8 dk64
	            -- s128 batch 2 1.001-1.011x (5 runs); the Intel Xeon
	            -- guest's AVX2 s197 1.008x
	            prefetch_min_mib = 2},
	-- where its kernels build and run: x86-64 compilers (the C condition
	-- guard), CPUs with these features (runtime/mha_cpu.c tests each), with
	-- these compiler flags (gcc and clang spell them alike)
	arch = "x86_64",
	guard = "defined(__x86_64__)",
	-- (F16C converts f16 keys and values, --kv-dtype f16; every AVX2 CPU
	-- has it, Intel's since Ivy Bridge, AMD's since Piledriver)
	cpu = {"avx2", "fma", "f16c"},
	cflags = "-mavx2 -mfma -mf16c",
	-- what a file compiled with those flags has defined (a file without
	-- them stops at an #error naming them), the target attribute that
	-- gives one function the same instructions, and the run-time test of
	-- the CPU (--target lists choose a variant by it)
	requires = "defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)",
	attribute = "avx2,fma,f16c",
	-- (F16C is not tested here: clang 14's __builtin_cpu_supports does
	-- not know it, and every CPU with AVX2 has it; runtime/mha_cpu.c
	-- tests it by CPUID)
	detect = '__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")',
	-- native picks the supported target of highest rank
	rank = 20,
}

-- Lane mask selecting the first n of 8 lanes, for partial loads/stores.
local function lanes(n)
	local m = {}
	for i = 1, 8 do
		m[i] = i <= n and "-1" or "0"
	end
	return "_mm256_setr_epi32(" .. table.concat(m, ", ") .. ")"
end

-- Helper functions, emitted only when an op used them.
T.helpers = {
	{"hsum", [[
static inline float P_hsum(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}
]]},
	-- the lane sums of a, b, c and d, times f, to p[0..3]: two rounds of
	-- pairwise sums within each half, then the halves added
	{"sums4", [[
static inline void P_sums4(float *p, __m256 a, __m256 b, __m256 c, __m256 d, float f)
{
	const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
	const __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));

	_mm_storeu_ps(p, _mm_mul_ps(s, _mm_set1_ps(f)));
}
]]},
	{"hmax", [[
static inline float P_hmax(__m256 v)
{
	__m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_max_ps(s, _mm_movehl_ps(s, s));
	s = _mm_max_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}
]]},
	-- the first n 16-bit elements at p, the rest zero, without reading
	-- past p[n-1] (no masked 16-bit load below AVX-512BW)
	{"load16", [[
static inline __m128i P_load16(const uint16_t *p, size_t n)
{
	uint16_t t[8] = {0};
	memcpy(t, p, n * sizeof *t);
	return _mm_loadu_si128((const void *)t);
}
]]},
	-- 8 floats rounded to bf16 (to nearest even; a NaN quiet, its high
	-- payload bits kept, as runtime/mha_kvstore.h), packed into 8 lanes
	{"bf16x", [[
static inline __m128i P_bf16x(__m256 x)
{
	const __m256i u = _mm256_castps_si256(x);
	const __m256i hi = _mm256_srli_epi32(u, 16);
	const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1)))), 16);
	const __m256i n = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
	const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
	const __m256i b = _mm256_blendv_epi8(r, n, nan);

	return _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
}
]]},
	-- the first n of 8 16-bit lanes of x to p, nothing past p[n-1]
	{"store16", [[
static inline void P_store16(uint16_t *p, __m128i x, size_t n)
{
	uint16_t t[8];
	_mm_storeu_si128((void *)t, x);
	memcpy(p, t, n * sizeof *t);
}
]]},
	-- --kv-dtype q8: block b's f16 scale broadcast by F16C; its 8 int8
	-- values from element i on as floats
	{"q8", [[
static inline __m256 P_q8d(const struct mha_q8_0 *b)
{
	return _mm256_cvtph_ps(_mm_set1_epi16((short)b->d));
}

static inline __m256 P_q8i(const struct mha_q8_0 *b, size_t i)
{
	const __m128i q = _mm_loadl_epi64((const void *)(b->qs + i));

	return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
}
]]},
}

-- lane i: the sum of x_i's lanes.  Each round adds two vectors' parts side
-- by side: 128-bit halves (x_k with x_k+4), then pairs of lanes within
-- halves twice; the halves' order leaves x_i's sum in lane i (14
-- shuffles, 7 adds)
T.helpers[#T.helpers + 1] = {"hsums", [[
static inline __m256 P_hsums(__m256 x0, __m256 x1, __m256 x2, __m256 x3, __m256 x4, __m256 x5, __m256 x6, __m256 x7)
{
	const __m256 s0 = _mm256_add_ps(_mm256_permute2f128_ps(x0, x4, 0x20), _mm256_permute2f128_ps(x0, x4, 0x31));
	const __m256 s1 = _mm256_add_ps(_mm256_permute2f128_ps(x1, x5, 0x20), _mm256_permute2f128_ps(x1, x5, 0x31));
	const __m256 s2 = _mm256_add_ps(_mm256_permute2f128_ps(x2, x6, 0x20), _mm256_permute2f128_ps(x2, x6, 0x31));
	const __m256 s3 = _mm256_add_ps(_mm256_permute2f128_ps(x3, x7, 0x20), _mm256_permute2f128_ps(x3, x7, 0x31));
	const __m256 w0 = _mm256_add_ps(_mm256_shuffle_ps(s0, s1, 0x88), _mm256_shuffle_ps(s0, s1, 0xdd));
	const __m256 w1 = _mm256_add_ps(_mm256_shuffle_ps(s2, s3, 0x88), _mm256_shuffle_ps(s2, s3, 0xdd));

	return _mm256_add_ps(_mm256_shuffle_ps(w0, w1, 0x88), _mm256_shuffle_ps(w0, w1, 0xdd));
}
]]}
function T.hsums(names)
	T.use("hsums")
	return T.prefix .. "_hsums(" .. table.concat(names, ", ") .. ")"
end

function T.zero() return "_mm256_setzero_ps()" end
function T.set1(x) return "_mm256_set1_ps(" .. x .. ")" end
function T.load(p) return "_mm256_load_ps(" .. p .. ")" end
function T.loadu(p) return "_mm256_loadu_ps(" .. p .. ")" end
function T.load_part(p, n) return "_mm256_maskload_ps(" .. p .. ", " .. lanes(n) .. ")" end
function T.store(p, v) return "_mm256_store_ps(" .. p .. ", " .. v .. ");" end
function T.storeu(p, v) return "_mm256_storeu_ps(" .. p .. ", " .. v .. ");" end
function T.store_part(p, v, n)
	return "_mm256_maskstore_ps(" .. p .. ", " .. lanes(n) .. ", " .. v .. ");"
end
function T.add(a, b) return "_mm256_add_ps(" .. a .. ", " .. b .. ")" end
function T.sub(a, b) return "_mm256_sub_ps(" .. a .. ", " .. b .. ")" end
function T.mul(a, b) return "_mm256_mul_ps(" .. a .. ", " .. b .. ")" end
function T.fma(a, b, c) return "_mm256_fmadd_ps(" .. a .. ", " .. b .. ", " .. c .. ")" end
function T.max(a, b) return "_mm256_max_ps(" .. a .. ", " .. b .. ")" end
function T.div(a, b) return "_mm256_div_ps(" .. a .. ", " .. b .. ")" end
function T.select_ge(x, lim, a, b)
	return "_mm256_blendv_ps(" .. b .. ", " .. a .. ", _mm256_cmp_ps(" .. x .. ", " .. lim .. ", _CMP_GE_OQ))"
end
function T.hsum(v) T.use("hsum") return T.prefix .. "_hsum(" .. v .. ")" end
function T.hmax(v) T.use("hmax") return T.prefix .. "_hmax(" .. v .. ")" end
function T.sums4(p, a, b, c, d, f)
	T.use("sums4")
	return T.prefix .. "_sums4(" .. table.concat({p, a, b, c, d, f}, ", ") .. ");"
end
function T.first(v) return "_mm256_cvtss_f32(" .. v .. ")" end
function T.as_int(v) return "_mm256_castps_si256(" .. v .. ")" end
function T.as_float(v) return "_mm256_castsi256_ps(" .. v .. ")" end
function T.shl(a, k) return "_mm256_slli_epi32(" .. a .. ", " .. k .. ")" end
-- The floats p[0], p[s], ..., p[(W-1) s] (s a constant whose multiples
-- fit an int32 lane).
function T.gather(p, s)
	local ix = {}
	for i = 0, T.width - 1 do
		ix[#ix + 1] = tostring(i * s)
	end
	return "_mm256_i32gather_ps(" .. p .. ", _mm256_setr_epi32(" .. table.concat(ix, ", ") .. "), 4)"
end
-- The 4x4 transposes within the 128-bit lanes that the transposes below
-- share, in two rounds of four shuffles: the unpacked pairs of the vectors
-- a[1..4], then of those (t[1..4]) the four vectors whose lanes hold the
-- lanes' transposes; each round as the expressions, declared by decl4
local function unpack4(a)
	return {"_mm256_unpacklo_ps(" .. a[1] .. ", " .. a[2] .. ")", "_mm256_unpackhi_ps(" .. a[1] .. ", " .. a[2] .. ")",
	        "_mm256_unpacklo_ps(" .. a[3] .. ", " .. a[4] .. ")", "_mm256_unpackhi_ps(" .. a[3] .. ", " .. a[4] .. ")"}
end
local function shuffle4(t)
	return {"_mm256_shuffle_ps(" .. t[1] .. ", " .. t[3] .. ", 0x44)", "_mm256_shuffle_ps(" .. t[1] .. ", " .. t[3] .. ", 0xee)",
	        "_mm256_shuffle_ps(" .. t[2] .. ", " .. t[4] .. ", 0x44)", "_mm256_shuffle_ps(" .. t[2] .. ", " .. t[4] .. ", 0xee)"}
end
-- the lines declaring n[1..4] as z[1..4], two to a line, appended to out
local function decl4(out, n, z)
	out[#out + 1] = "const __m256 " .. n[1] .. " = " .. z[1] .. ", " .. n[2] .. " = " .. z[2] .. ";"
	out[#out + 1] = "const __m256 " .. n[3] .. " = " .. z[3] .. ", " .. n[4] .. " = " .. z[4] .. ";"
end
-- the names string.format(f, ..., k) for k = 0..3 (a vector's temporaries)
local function names4(f, ...)
	local n = {}
	for k = 0, 3 do
		n[k + 1] = string.format(f, ...) .. k
	end
	return n
end
-- names[4c+1 .. 4c+4]
local function quarter(names, c) return table.move(names, 4 * c + 1, 4 * c + 4, 1, {}) end
-- the bits of the 32 bytes at p that are zero (bit i: byte i), for the
-- boolean mask: one compare and one movemask (AVX2)
function T.zero32(p)
	return "(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256((const void *)(" .. p .. ")), _mm256_setzero_si256()))"
end
-- Transpose the 8 vectors held in the C variables names[1..8] in place:
-- lane j of names[i] goes to lane i of names[j].  Three rounds of 8
-- shuffles (unpack, shuffle, 128-bit permute).
function T.transpose(names)
	local x = names
	local out = {}
	local t, u = {{"t0", "t1", "t2", "t3"}, {"t4", "t5", "t6", "t7"}}, {{"u0", "u1", "u2", "u3"}, {"u4", "u5", "u6", "u7"}}
	decl4(out, t[1], unpack4(quarter(x, 0)))
	decl4(out, t[2], unpack4(quarter(x, 1)))
	decl4(out, u[1], shuffle4(t[1]))
	decl4(out, u[2], shuffle4(t[2]))
	for i = 0, 3 do
		out[#out + 1] = string.format("%s = _mm256_permute2f128_ps(u%d, u%d, 0x20); %s = _mm256_permute2f128_ps(u%d, u%d, 0x31);",
			x[i + 1], i, i + 4, x[i + 5], i, i + 4)
	end
	return "{\n\t" .. table.concat(out, "\n\t") .. "\n}"
end
-- W rows of W floats transposed on their way from memory (row(i): C text of
-- row i's first float), as the statements declaring the vectors names[1..W]
-- (element d of rows 0..W-1 in names[d + 1]): the rows' halves put side by
-- side by the loads (the halves of rows i and i+4 in one vector:
-- vinsertf128 from memory, a load and an op on any vector port), then 4x4
-- transposes within the 128-bit lanes: 16 shuffles and 8 inserts where
-- T.transpose takes 24 shuffles, all on the one shuffle port
function T.transpose_load(names, row)
	local out = {}
	for c = 0, 1 do
		local r, t = names4("r%d_", c), names4("t%d_", c)
		for i = 0, 3 do
			out[#out + 1] = string.format("const __m256 %s = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(%s + %d)), _mm_loadu_ps(%s + %d), 1);",
				r[i + 1], row(i), 4 * c, row(i + 4), 4 * c)
		end
		decl4(out, t, unpack4(r))
		decl4(out, quarter(names, c), shuffle4(t))
	end
	return table.concat(out, "\n")
end
-- the W vectors names[1..W] (element d of rows 0..W-1 in names[d + 1])
-- stored as W rows of W floats (row(i): C text of row i's first float, any
-- alignment): 4x4 transposes within the 128-bit lanes, then each lane
-- stored by itself (the upper by vextractf128 to memory: a store, no
-- shuffle; clang instead puts each row's halves together with vinsertf128,
-- an op on any vector port, and stores whole rows): 16 shuffles where
-- T.transpose takes 24
function T.transpose_store(names, row)
	local out = {}
	for c = 0, 1 do
		local s = names4("s%d_", c)
		decl4(out, s, unpack4(quarter(names, c)))
		for i, z in ipairs(shuffle4(s)) do
			out[#out + 1] = string.format("const __m256 z%d_%d = %s;", c, i - 1, z)
			out[#out + 1] = string.format("_mm_storeu_ps(%s + %d, _mm256_castps256_ps128(z%d_%d));", row(i - 1), 4 * c, c, i - 1)
			out[#out + 1] = string.format("_mm_storeu_ps(%s + %d, _mm256_extractf128_ps(z%d_%d, 1));", row(i + 3), 4 * c, c, i - 1)
		end
	end
	return table.concat(out, "\n")
end
-- a * b where x >= lim, else 0
function T.mul_ge(a, b, x, lim)
	return "_mm256_and_ps(" .. T.mul(a, b) .. ", _mm256_cmp_ps(" .. x .. ", " .. lim .. ", _CMP_GE_OQ))"
end
-- x where x >= lim, else lim (max takes its second operand where either
-- is NaN).  (measured: the softmax's 2^x with x raised to -127 first
-- instead of its result masked by a compare and an and, make bench-ab:
-- h8 dk64 s128 1.000-1.016x, h12 dk64 s197 1.017-1.018x, h8 dk64 s512 causal
-- 1.010-1.015x; its six exps at a time then spill 12 vectors, not 20)
function T.clamp_lo(x, lim) return T.max(x, lim) end
-- f16 and bf16 elements (--kv-dtype) as floats: F16C's conversion; bf16
-- is the high half of a float, zero-extended and shifted up
local function bf16(x)
	return "_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(" .. x .. "), 16))"
end
local function load16(p) return "_mm_loadu_si128((const void *)(" .. p .. "))" end
local function part16(p, n) T.use("load16") return T.prefix .. "_load16(" .. p .. ", " .. n .. ")" end
function T.load_f16(p) return "_mm256_cvtph_ps(" .. load16(p) .. ")" end
function T.load_part_f16(p, n) return "_mm256_cvtph_ps(" .. part16(p, n) .. ")" end
function T.load_bf16(p) return bf16(load16(p)) end
function T.load_part_bf16(p, n) return bf16(part16(p, n)) end
-- floats stored as f16 (F16C, to nearest even) or bf16 (--dtype's out)
local function f16x(v) return "_mm256_cvtps_ph(" .. v .. ", _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)" end
local function bf16x(v) T.use("bf16x") return T.prefix .. "_bf16x(" .. v .. ")" end
local function store16(p, x) return "_mm_storeu_si128((void *)(" .. p .. "), " .. x .. ");" end
local function spart16(p, x, n) T.use("store16") return T.prefix .. "_store16(" .. p .. ", " .. x .. ", " .. n .. ");" end
function T.store_f16(p, v) return store16(p, f16x(v)) end
function T.store_part_f16(p, v, n) return spart16(p, f16x(v), n) end
function T.store_bf16(p, v) return store16(p, bf16x(v)) end
function T.store_part_bf16(p, v, n) return spart16(p, bf16x(v), n) end

return T
