-- AVX-512 (AVX512F): 16 floats per vector, 32 registers.  Every op returns
-- C text.
local T = {
	name = "avx512",
	width = 16,
	vec = "__m512",
	-- vector registers (templates/main.lua sizes micro-tiles by them)
	registers = 32,
	includes = {"<immintrin.h>"},
	-- tuning defaults: the micro-tiles (mq/W x nk and mq/W x nv
	-- accumulators) fit the 32-register file
	-- (measured: 384-row query blocks read each key and value block half as
	-- often as 192; 1.05x on h16 dk128 s1024 causal.  512 against 384 on
	-- the Intel Xeon guest (make bench-ab, clang): h16 dk128 s1024 causal
	-- 1.009-1.013x, s1024 1.004x, h32 dk128 s2048 causal 1.010x, h12
	-- dk96 s1024 causal 1.015x, h16 dk64 s1024 causal 1.011x, s900
	-- 1.008x; and one block of s577 (under 3/2 of it) 1.010x, causal
	-- 1.017x.  1024 at dk 64 a little more (s1024 causal 1.005x over
	-- 512), but half the work items for a call's threads to share.
	-- AVX2 keeps 384: its machines' L2 is smaller (512 KiB on Zen 3))
	-- (measured: heads of dk + dv <= 128 floats do better with 64-key
	-- blocks, whose keys and values, 32 KiB, fit the 48 KiB L1 together,
	-- as on AVX2.  On the Intel Xeon guest against 128 (make bench-ab,
	-- clang; in the host's quiet minutes, then its loaded ones): h8 dk64
	-- s128 1.010x, then 1.020-1.029x; s128 batch 8 1.032-1.039x, then
	-- 1.036-1.061x; s197 batch 4 1.000x, then 0.996-1.026x; h12 dk64
	-- s197 (blocks of 80 by the thin-block rule) 0.995-0.997x, then
	-- 1.019-1.024x; 96-key blocks less on each)
	-- (measured: heads of dk + dv <= 256 floats do better with 64-key
	-- blocks too where the keys number 512 or more: a P.V micro-kernel
	-- call reads its chunk of up to 6 vectors of each of a block's value
	-- rows, 16-24 KiB of them in 64 keys, which stay in L1 for the
	-- tile's next call, where 128 keys' 32-48 KiB do not.  On the Intel
	-- Xeon guest against 128 (make bench-ab, clang, quiet minutes): h16
	-- dk128 s512 1.040-1.044x (gcc 1.046x), batch 4 1.049x, s1024
	-- 1.041-1.048x, s1025 1.041-1.043x; h12 dk96 s512 0.997-1.061x,
	-- 1.029x the median of six, s1024 1.023x; h16 dk80 s512 1.026x.
	-- Shorter keys keep 128 and the thin-block rule: h16 dk80 s257 took
	-- 64 x 4 + 1 at 0.988-0.990x against its 96 x 2 + 65, h16 dk128
	-- s197 64 x 3 + 5 at 0.996-1.019x.  AVX2 on that machine, whose P.V
	-- at dv > 64 is the rows-in-lanes one: dk128 s1024 1.015-1.017x,
	-- s512 and dk96 s512 1.000x, so it keeps 128)
	defaults = {block_kv = 128, block_kv_causal = 64, block_q = 512, mq = 32,
	            block_kv_narrow = 64, block_kv_narrow_dims = 128,
	            block_kv_long_dims = 256, block_kv_long_keys = 512,
	            nk = 8, nv = 8, kv_split = 4,
	            -- the softmax's exps 4 vectors at a time (on AVX2 4 took
	            -- most of 6's gain, 1.025x against 1.03x, with a third less
	            -- code per kernel; here 2, 6 and 8 measured 0.992-1.009x
	            -- against 4 on h8 dk64 s128 and s512 causal)
	            exp_group = 4,
	            -- P.V takes 4 rows of weights broadcast against up to 6
	            -- vectors of a value row, the output's columns in vector
	            -- lanes (templates/main.lua, P.pvr)
	            pv_rows = 4,
	            -- the compiler unrolls the score micro-kernels' loop over
	            -- the head dim 4 times (AVX2 2; the P.V here is the
	            -- pv_rows one, which unroll_pv leaves alone).  2 measured on
	            -- the Intel Xeon guest against no unroll (make bench-ab,
	            -- clang, the results the same bit for bit): in the host's
	            -- quiet minutes neutral (h8 dk64 s128 1.004x, h12 dk64
	            -- s197 0.997x, h16 dk128 s1024 causal 1.001x), in its
	            -- loaded ones s128 1.001-1.013x, s197 1.004-1.010x, h8
	            -- dk64 s512 causal 1.010-1.021x, s1024 causal 1.003-1.018x.
	            -- 4 against 2 (late 2026-12-04, the outputs placed alike):
	            -- h8 dk64 s512 causal 1.009x and 1.011x, s128 1.004x twice,
	            -- h12 dk64 s197 1.002x, s128 batch 8 1.006x, s197 batch 4
	            -- 1.004x, h16 dk128 s1024 causal 1.000x
	            unroll_qk = 4,
	            -- prefetch what comes next in calls of 2 MiB of q, k, v
	            -- and out or more (4 elsewhere, set on AMD Zen 3, whose
	            -- prefetches fill L1 too): on the Intel Xeon guest (2 MiB
	            -- of L2) against 4, make bench-ab with the kernel's bytes
	            -- edited: h12 dk64 s197 (2.4 MiB) 1.007x (3 runs), h12
	            -- dk64 s256 1.018x, h16 dk64 s128 1.012x, h8 dk128 s256
	            -- causal 1.012x, h8 dk64 s128 batch 2 1.017x; at 1 MiB
	            -- (s128) prefetching cost 0.993-0.994x (AVX2: avx2.lua)
	            prefetch_min_mib = 2,
	            -- the layer's projections: 12 rows x 2 vectors of
	            -- accumulators (24 of the 32 registers)
	            gemm_mr = 12, gemm_nv = 2},
	-- where its kernels build and run: x86-64 compilers (the C condition
	-- guard), CPUs with these features (runtime/mha_cpu.c tests each), with
	-- these compiler flags (gcc and clang spell them alike)
	arch = "x86_64",
	guard = "defined(__x86_64__)",
	cpu = {"avx512f", "avx512dq"},
	cflags = "-mavx512f -mavx512dq",
	-- what a file compiled with those flags has defined (a file without
	-- them stops at an #error naming them), the target attribute that
	-- gives one function the same instructions, and the run-time test of
	-- the CPU (--target lists choose a variant by it).  AVX512F is what
	-- the kernels need: built with -mavx512f alone, and in the attribute's
	-- builds, the softmax's 2^x takes its AVX512F form (frac_if below)
	requires = "defined(__AVX512F__)",
	attribute = "avx512f",
	detect = '__builtin_cpu_supports("avx512f")',
	-- native picks the supported target of highest rank
	rank = 30,
}

-- Lane mask selecting the first n of 16 lanes, for partial loads/stores
-- (masked-off lanes are neither read nor written).
local function lanes(n)
	return string.format("(__mmask16)0x%04x", (1 << n) - 1)
end

T.helpers = {
	-- the first n 16-bit elements at p, the rest zero, without reading
	-- past p[n-1] (a masked 16-bit load needs AVX-512BW)
	{"load16", [[
static inline __m256i P_load16(const uint16_t *p, size_t n)
{
	uint16_t t[16] = {0};
	memcpy(t, p, n * sizeof *t);
	return _mm256_loadu_si256((const void *)t);
}
]]},
	-- 16 floats rounded to bf16 (to nearest even; a NaN quiet, its high
	-- payload bits kept, as runtime/mha_kvstore.h), narrowed to 16 lanes
	{"bf16x", [[
static inline __m256i P_bf16x(__m512 x)
{
	const __m512i u = _mm512_castps_si512(x);
	const __m512i hi = _mm512_srli_epi32(u, 16);
	const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1)))), 16);
	const __m512i n = _mm512_or_si512(hi, _mm512_set1_epi32(0x40));

	const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));

	return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, r, n));
}
]]},
	-- the first n of 16 16-bit lanes of x to p, nothing past p[n-1]
	{"store16", [[
static inline void P_store16(uint16_t *p, __m256i x, size_t n)
{
	uint16_t t[16];
	_mm256_storeu_si256((void *)t, x);
	memcpy(p, t, n * sizeof *t);
}
]]},
	-- --kv-dtype q8: block b's f16 scale broadcast and converted; its 16
	-- int8 values from element i on as floats
	{"q8", [[
static inline __m512 P_q8d(const struct mha_q8_0 *b)
{
	return _mm512_cvtph_ps(_mm256_set1_epi16((short)b->d));
}

static inline __m512 P_q8i(const struct mha_q8_0 *b, size_t i)
{
	const __m128i q = _mm_loadu_si128((const void *)(b->qs + i));

	return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q));
}
]]},
}

-- lane i: the sum of x_i's lanes.  Each round adds two vectors' parts side
-- by side: 256-bit halves (x_k with x_k+4, x_k+8 with x_k+12), 128-bit
-- quarters, then pairs of lanes within quarters twice; the quarters' order
-- leaves x_i's sum in lane i (30 shuffles, 15 adds)
do
	local x, out = {}, {}
	for i = 0, 15 do
		x[#x + 1] = "__m512 x" .. i
	end
	local function put(s) out[#out + 1] = "\t" .. s end
	local function pair(r, a, b, shuf, lo, hi)
		put(string.format("const __m512 %s = _mm512_add_ps(%s(%s, %s, 0x%02x), %s(%s, %s, 0x%02x));",
			r, shuf, a, b, lo, shuf, a, b, hi))
	end
	for k = 0, 3 do
		pair("s" .. k, "x" .. k, "x" .. k + 4, "_mm512_shuffle_f32x4", 0x44, 0xee)
		pair("s" .. k + 4, "x" .. k + 8, "x" .. k + 12, "_mm512_shuffle_f32x4", 0x44, 0xee)
	end
	for k = 0, 3 do
		pair("t" .. k, "s" .. k, "s" .. k + 4, "_mm512_shuffle_f32x4", 0x88, 0xdd)
	end
	pair("w0", "t0", "t1", "_mm512_shuffle_ps", 0x88, 0xdd)
	pair("w1", "t2", "t3", "_mm512_shuffle_ps", 0x88, 0xdd)
	put("")
	put("return _mm512_add_ps(_mm512_shuffle_ps(w0, w1, 0x88), _mm512_shuffle_ps(w0, w1, 0xdd));")
	T.helpers[#T.helpers + 1] = {"hsums", "static inline __m512 P_hsums(" .. table.concat(x, ", ") ..
		")\n{\n" .. table.concat(out, "\n") .. "\n}\n"}
end
function T.hsums(names)
	T.use("hsums")
	return T.prefix .. "_hsums(" .. table.concat(names, ", ") .. ")"
end

function T.zero() return "_mm512_setzero_ps()" end
function T.set1(x) return "_mm512_set1_ps(" .. x .. ")" end
function T.load(p) return "_mm512_load_ps(" .. p .. ")" end
function T.loadu(p) return "_mm512_loadu_ps(" .. p .. ")" end
function T.load_part(p, n) return "_mm512_maskz_loadu_ps(" .. lanes(n) .. ", " .. p .. ")" end
function T.store(p, v) return "_mm512_store_ps(" .. p .. ", " .. v .. ");" end
function T.storeu(p, v) return "_mm512_storeu_ps(" .. p .. ", " .. v .. ");" end
function T.store_part(p, v, n)
	return "_mm512_mask_storeu_ps(" .. p .. ", " .. lanes(n) .. ", " .. v .. ");"
end
function T.add(a, b) return "_mm512_add_ps(" .. a .. ", " .. b .. ")" end
function T.sub(a, b) return "_mm512_sub_ps(" .. a .. ", " .. b .. ")" end
function T.mul(a, b) return "_mm512_mul_ps(" .. a .. ", " .. b .. ")" end
function T.fma(a, b, c) return "_mm512_fmadd_ps(" .. a .. ", " .. b .. ", " .. c .. ")" end
function T.max(a, b) return "_mm512_max_ps(" .. a .. ", " .. b .. ")" end
function T.div(a, b) return "_mm512_div_ps(" .. a .. ", " .. b .. ")" end
function T.select_ge(x, lim, a, b)
	return "_mm512_mask_blend_ps(_mm512_cmp_ps_mask(" .. x .. ", " .. lim .. ", _CMP_GE_OQ), " .. b .. ", " .. a .. ")"
end
function T.hsum(v) return "_mm512_reduce_add_ps(" .. v .. ")" end
function T.hmax(v) return "_mm512_reduce_max_ps(" .. v .. ")" end
function T.first(v) return "_mm512_cvtss_f32(" .. v .. ")" end
function T.as_int(v) return "_mm512_castps_si512(" .. v .. ")" end
function T.as_float(v) return "_mm512_castsi512_ps(" .. v .. ")" end
function T.shl(a, k) return "_mm512_slli_epi32(" .. a .. ", " .. k .. ")" end
-- The floats p[0], p[s], ..., p[(W-1) s] (s a constant whose multiples
-- fit an int32 lane).
function T.gather(p, s)
	local ix = {}
	for i = 0, T.width - 1 do
		ix[#ix + 1] = tostring(i * s)
	end
	return "_mm512_i32gather_ps(_mm512_setr_epi32(" .. table.concat(ix, ", ") .. "), " .. p .. ", 4)"
end
-- the bits of the 32 bytes at p that are zero (bit i: byte i), for the
-- boolean mask: AVX2's compare and movemask (AVX512F implies AVX2; a
-- 64-byte form would need AVX512BW, which the target does not ask for)
function T.zero32(p)
	return "(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256((const void *)(" .. p .. ")), _mm256_setzero_si256()))"
end
-- the boolean mask's bits applied to a vector of scores: one test, one
-- masked store
function T.hide_bit(p, b, k)
	return "_mm512_mask_store_ps(" .. p .. ", _mm512_test_epi32_mask(_mm512_loadu_si512(" .. b .. "), _mm512_set1_epi32((int)(1u << (" .. k .. ")))), _mm512_set1_ps(-INFINITY));"
end
-- Transpose the 16 vectors held in the C variables names[1..16] in place:
-- lane j of names[i] goes to lane i of names[j].  Four rounds of 16
-- shuffles: after the unpacks and the in-lane shuffles u(4i + k) holds, in
-- its 128-bit lane c, element 4c + k of rows 4i..4i+3; two rounds of
-- 128-bit lane shuffles then bring each element's four lanes together from
-- rows 4 and 8 apart.  (The tiled kernels' q pack, output and bias use it
-- instead of gathers: see templates/tiled.c.in.)
function T.transpose(names)
	local x = names
	local out = {"{"}
	local function line(s) out[#out + 1] = "\t" .. s end
	for i = 0, 7 do
		line(string.format("const __m512 t%d = _mm512_unpacklo_ps(%s, %s), t%d = _mm512_unpackhi_ps(%s, %s);",
			2 * i, x[2 * i + 1], x[2 * i + 2], 2 * i + 1, x[2 * i + 1], x[2 * i + 2]))
	end
	for i = 0, 3 do
		local a, b = 4 * i, 4 * i + 2
		line(string.format("const __m512 u%d = _mm512_shuffle_ps(t%d, t%d, 0x44), u%d = _mm512_shuffle_ps(t%d, t%d, 0xee);",
			4 * i, a, b, 4 * i + 1, a, b))
		line(string.format("const __m512 u%d = _mm512_shuffle_ps(t%d, t%d, 0x44), u%d = _mm512_shuffle_ps(t%d, t%d, 0xee);",
			4 * i + 2, a + 1, b + 1, 4 * i + 3, a + 1, b + 1))
	end
	-- 128-bit lanes 0 and 2 (0x88) or 1 and 3 (0xdd) of two vectors
	for i = 0, 1 do
		for k = 0, 3 do
			local a, b = 8 * i + k, 8 * i + 4 + k
			line(string.format("const __m512 v%d = _mm512_shuffle_f32x4(u%d, u%d, 0x88), v%d = _mm512_shuffle_f32x4(u%d, u%d, 0xdd);",
				8 * i + k, a, b, 8 * i + 4 + k, a, b))
		end
	end
	for k = 0, 7 do
		line(string.format("%s = _mm512_shuffle_f32x4(v%d, v%d, 0x88); %s = _mm512_shuffle_f32x4(v%d, v%d, 0xdd);",
			x[k + 1], k, k + 8, x[k + 9], k, k + 8))
	end
	out[#out + 1] = "}"
	return table.concat(out, "\n")
end
-- W rows of W floats transposed on their way from memory (row(i): C text of
-- row i's first float), as the statements declaring the vectors names[1..W]
-- (element d of rows 0..W-1 in names[d + 1]): the rows' 128-bit quarters
-- put side by side by the loads (the quarters of rows i, i+4, i+8, i+12 in
-- one vector: vinsertf32x4 from memory, a load and an op on either of the
-- two vector ports), then 4x4 transposes within the 128-bit lanes: 32
-- shuffles and 48 inserts where T.transpose takes 64 shuffles, all on the
-- one shuffle port
function T.transpose_load(names, row)
	local out = {}
	for c = 0, 3 do
		for i = 0, 3 do
			local e = "_mm512_castps128_ps512(_mm_loadu_ps(" .. row(i) .. " + " .. 4 * c .. "))"
			for l = 1, 3 do
				e = "_mm512_insertf32x4(" .. e .. ", _mm_loadu_ps(" .. row(i + 4 * l) .. " + " .. 4 * c .. "), " .. l .. ")"
			end
			out[#out + 1] = string.format("const __m512 r%d_%d = %s;", c, i, e)
		end
		out[#out + 1] = string.format("const __m512 t%d_0 = _mm512_unpacklo_ps(r%d_0, r%d_1), t%d_1 = _mm512_unpackhi_ps(r%d_0, r%d_1);", c, c, c, c, c, c)
		out[#out + 1] = string.format("const __m512 t%d_2 = _mm512_unpacklo_ps(r%d_2, r%d_3), t%d_3 = _mm512_unpackhi_ps(r%d_2, r%d_3);", c, c, c, c, c, c)
		out[#out + 1] = string.format("const __m512 %s = _mm512_shuffle_ps(t%d_0, t%d_2, 0x44), %s = _mm512_shuffle_ps(t%d_0, t%d_2, 0xee);",
			names[4 * c + 1], c, c, names[4 * c + 2], c, c)
		out[#out + 1] = string.format("const __m512 %s = _mm512_shuffle_ps(t%d_1, t%d_3, 0x44), %s = _mm512_shuffle_ps(t%d_1, t%d_3, 0xee);",
			names[4 * c + 3], c, c, names[4 * c + 4], c, c)
	end
	return table.concat(out, "\n")
end
-- a * b where x >= lim, else 0: one masked multiply (clang does not fuse
-- a multiply and a masked move).  No clamp_lo: its compare and masked
-- multiply are as many operations as a max and a multiply, and 32
-- registers hold the exps' values (not measured: no AVX-512 machine here)
function T.mul_ge(a, b, x, lim)
	return "_mm512_maskz_mul_ps(_mm512_cmp_ps_mask(" .. x .. ", " .. lim .. ", _CMP_GE_OQ), " .. a .. ", " .. b .. ")"
end
-- the softmax's 2^x where the compiler is given AVX512DQ (cflags below;
-- not the attribute's builds): vreduceps takes x - round(x) in one op
function T.frac(x) return "_mm512_reduce_ps(" .. x .. ", _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)" end
function T.frac_if() return "defined(__AVX512DQ__)" end
function T.scale2_ge(a, n, x, lim)
	return "_mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(" .. x .. ", " .. lim .. ", _CMP_GE_OQ), " .. a .. ", " .. n .. ")"
end
-- f16 and bf16 elements (--kv-dtype) as floats: AVX512F's conversion;
-- bf16 is the high half of a float, zero-extended and shifted up
local function bf16(x)
	return "_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(" .. x .. "), 16))"
end
local function load16(p) return "_mm256_loadu_si256((const void *)(" .. p .. "))" end
local function part16(p, n) T.use("load16") return T.prefix .. "_load16(" .. p .. ", " .. n .. ")" end
function T.load_f16(p) return "_mm512_cvtph_ps(" .. load16(p) .. ")" end
function T.load_part_f16(p, n) return "_mm512_cvtph_ps(" .. part16(p, n) .. ")" end
function T.load_bf16(p) return bf16(load16(p)) end
function T.load_part_bf16(p, n) return bf16(part16(p, n)) end
-- floats stored as f16 (AVX512F, to nearest even) or bf16 (--dtype's out)
local function f16x(v) return "_mm512_cvtps_ph(" .. v .. ", _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)" end
local function bf16x(v) T.use("bf16x") return T.prefix .. "_bf16x(" .. v .. ")" end
local function store16(p, x) return "_mm256_storeu_si256((void *)(" .. p .. "), " .. x .. ");" end
local function spart16(p, x, n) T.use("store16") return T.prefix .. "_store16(" .. p .. ", " .. x .. ", " .. n .. ");" end
function T.store_f16(p, v) return store16(p, f16x(v)) end
function T.store_part_f16(p, v, n) return spart16(p, f16x(v), n) end
function T.store_bf16(p, v) return store16(p, bf16x(v)) end
function T.store_part_bf16(p, v, n) return spart16(p, bf16x(v), n) end

return T
