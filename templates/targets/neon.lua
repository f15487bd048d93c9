-- AArch64 Advanced SIMD: 4 floats per vector.  Every op returns C text.
local T = {
	name = "neon",
	width = 4,
	vec = "float32x4_t",
	-- vector registers (templates/main.lua sizes micro-tiles by them)
	registers = 32,
	includes = {"<arm_neon.h>"},
	-- tuning defaults: the micro-tiles (mq/W x nk and mq/W x nv
	-- accumulators) fit the register file.  Read from the compilers'
	-- assembly (no AArch64 machine to time them on): 16 x 6 holds 24
	-- accumulators, 4 query vectors and the keys' floats, and gcc 12
	-- loads all 6 floats first and spills 3 accumulators to the stack in
	-- both loops (clang 14 does not); 16 x 5 spills with neither, 20 FMLA
	-- in 31-32 instructions (16 x 6 with clang: 24 in 35-37).  The
	-- blocks are still guesses.
	defaults = {block_kv = 64, block_q = 64, mq = 16, nk = 5, nv = 5, kv_split = 4,
	            -- the softmax's exps 4 vectors at a time (not measured:
	            -- needs an ARM machine; on AVX2 4 took most of 6's gain, 1.025x
	            -- against 1.03x, with a third less code per kernel)
	            exp_group = 4,
	            -- the layer's projections: 8 rows x 2 vectors of accumulators
	            gemm_mr = 8, gemm_nv = 2},
	-- where its kernels build and run: AArch64 compilers (the C condition
	-- guard) and CPUs (Advanced SIMD is mandatory there), no extra flags
	arch = "aarch64",
	guard = "defined(__aarch64__)",
	cpu = {"neon"},
	cflags = "",
	-- nothing to require of the compiler or test in the CPU (Advanced
	-- SIMD is part of every AArch64 CPU)
	requires = "",
	attribute = "",
	detect = "1",
	-- native picks the supported target of highest rank
	rank = 20,
}

T.helpers = {
	-- the first n 16-bit elements at p, the rest zero, without reading
	-- past p[n-1]
	{"load16", [[
static inline uint16x4_t P_load16(const uint16_t *p, size_t n)
{
	uint16_t t[4] = {0};
	memcpy(t, p, n * sizeof *t);
	return vld1_u16(t);
}
]]},
	-- 4 floats rounded to bf16 (to nearest even; a NaN quiet, its high
	-- payload bits kept, as runtime/mha_kvstore.h), narrowed to 4 lanes
	{"bf16x", [[
static inline uint16x4_t P_bf16x(float32x4_t x)
{
	const uint32x4_t u = vreinterpretq_u32_f32(x);
	const uint32x4_t hi = vshrq_n_u32(u, 16);
	const uint32x4_t r = vshrq_n_u32(vaddq_u32(u, vaddq_u32(vdupq_n_u32(0x7fff), vandq_u32(hi, vdupq_n_u32(1)))), 16);
	const uint32x4_t n = vorrq_u32(hi, vdupq_n_u32(0x40));

	return vmovn_u32(vbslq_u32(vceqq_f32(x, x), r, n));
}
]]},
	-- the first n of 4 16-bit lanes of x to p, nothing past p[n-1]
	{"store16", [[
static inline void P_store16(uint16_t *p, uint16x4_t x, size_t n)
{
	uint16_t t[4];
	vst1_u16(t, x);
	memcpy(p, t, n * sizeof *t);
}
]]},
	-- --kv-dtype q8: block b's f16 scale widened to 4 floats; its 4 int8
	-- values from element i on, widened twice and converted
	{"q8", [[
static inline float32x4_t P_q8d(const struct mha_q8_0 *b)
{
	return vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(b->d)));
}

static inline float32x4_t P_q8i(const struct mha_q8_0 *b, size_t i)
{
	int32_t w;

	memcpy(&w, b->qs + i, sizeof w);
	const int16x8_t q = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(w)));

	return vcvtq_f32_s32(vmovl_s16(vget_low_s16(q)));
}
]]},
}

function T.zero() return "vdupq_n_f32(0.0f)" end
function T.set1(x) return "vdupq_n_f32(" .. x .. ")" end
function T.load(p) return "vld1q_f32(" .. p .. ")" end
function T.loadu(p) return "vld1q_f32(" .. p .. ")" end
-- The first n lanes from p, the rest zero; never reads past p[n-1].
function T.load_part(p, n)
	local e = "vdupq_n_f32(0.0f)"
	for i = 0, n - 1 do
		e = "vld1q_lane_f32(" .. p .. " + " .. i .. ", " .. e .. ", " .. i .. ")"
	end
	return e
end
function T.store(p, v) return "vst1q_f32(" .. p .. ", " .. v .. ");" end
function T.storeu(p, v) return "vst1q_f32(" .. p .. ", " .. v .. ");" end
function T.store_part(p, v, n)
	local s = {}
	for i = 0, n - 1 do
		s[#s + 1] = "vst1q_lane_f32(" .. p .. " + " .. i .. ", " .. v .. ", " .. i .. ");"
	end
	return table.concat(s, " ")
end
function T.add(a, b) return "vaddq_f32(" .. a .. ", " .. b .. ")" end
function T.sub(a, b) return "vsubq_f32(" .. a .. ", " .. b .. ")" end
function T.mul(a, b) return "vmulq_f32(" .. a .. ", " .. b .. ")" end
function T.fma(a, b, c) return "vfmaq_f32(" .. c .. ", " .. a .. ", " .. b .. ")" end
function T.max(a, b) return "vmaxq_f32(" .. a .. ", " .. b .. ")" end
function T.div(a, b) return "vdivq_f32(" .. a .. ", " .. b .. ")" end
function T.select_ge(x, lim, a, b) return "vbslq_f32(vcgeq_f32(" .. x .. ", " .. lim .. "), " .. a .. ", " .. b .. ")" end
function T.hsum(v) return "vaddvq_f32(" .. v .. ")" end
function T.hmax(v) return "vmaxvq_f32(" .. v .. ")" end
function T.sums4(p, a, b, c, d, f)
	return "vst1q_f32(" .. p .. ", vmulq_n_f32(vpaddq_f32(vpaddq_f32(" .. a .. ", " .. b .. "), vpaddq_f32(" ..
	       c .. ", " .. d .. ")), " .. f .. "));"
end
-- lane i: the sum of x_i's lanes, by pairwise adds twice
function T.hsums(x)
	return "vpaddq_f32(vpaddq_f32(" .. x[1] .. ", " .. x[2] .. "), vpaddq_f32(" .. x[3] .. ", " .. x[4] .. "))"
end
function T.first(v) return "vgetq_lane_f32(" .. v .. ", 0)" end
function T.as_int(v) return "vreinterpretq_s32_f32(" .. v .. ")" end
function T.as_float(v) return "vreinterpretq_f32_s32(" .. v .. ")" end
function T.shl(a, k) return "vshlq_n_s32(" .. a .. ", " .. k .. ")" end
-- Transpose the 4 vectors held in the C variables names[1..4] in place:
-- lane j of names[i] goes to lane i of names[j].
function T.transpose(x)
	return "{\n\tconst float32x4x2_t t0 = vtrnq_f32(" .. x[1] .. ", " .. x[2] .. "), t1 = vtrnq_f32(" .. x[3] .. ", " .. x[4] .. ");\n\t" ..
		x[1] .. " = vcombine_f32(vget_low_f32(t0.val[0]), vget_low_f32(t1.val[0]));\n\t" ..
		x[2] .. " = vcombine_f32(vget_low_f32(t0.val[1]), vget_low_f32(t1.val[1]));\n\t" ..
		x[3] .. " = vcombine_f32(vget_high_f32(t0.val[0]), vget_high_f32(t1.val[0]));\n\t" ..
		x[4] .. " = vcombine_f32(vget_high_f32(t0.val[1]), vget_high_f32(t1.val[1]));\n}"
end
-- a * b where x >= lim, else 0
function T.mul_ge(a, b, x, lim)
	return "vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(" .. T.mul(a, b) ..
	       "), vcgeq_f32(" .. x .. ", " .. lim .. ")))"
end
-- x where x >= lim, else lim, and lim where x is NaN (maxnm takes the
-- number): the softmax's 2^x raises x to -127 with it, one instruction
-- where masking the result takes a compare and an and (as on AVX2, where
-- it was measured; not timed on an ARM machine)
function T.clamp_lo(x, lim) return "vmaxnmq_f32(" .. x .. ", " .. lim .. ")" end
-- f16 and bf16 elements (--kv-dtype) as floats: the f16 conversion of
-- Advanced SIMD; bf16 is the high half of a float, widened by a shift
local function f16(x) return "vcvt_f32_f16(vreinterpret_f16_u16(" .. x .. "))" end
local function bf16(x) return "vreinterpretq_f32_u32(vshll_n_u16(" .. x .. ", 16))" end
local function part16(p, n) T.use("load16") return T.prefix .. "_load16(" .. p .. ", " .. n .. ")" end
function T.load_f16(p) return f16("vld1_u16(" .. p .. ")") end
function T.load_part_f16(p, n) return f16(part16(p, n)) end
function T.load_bf16(p) return bf16("vld1_u16(" .. p .. ")") end
function T.load_part_bf16(p, n) return bf16(part16(p, n)) end
-- floats stored as f16 (rounded by the FPCR's mode, to nearest even) or
-- bf16 (--dtype's out)
local function f16x(v) return "vreinterpret_u16_f16(vcvt_f16_f32(" .. v .. "))" end
local function bf16x(v) T.use("bf16x") return T.prefix .. "_bf16x(" .. v .. ")" end
local function spart16(p, x, n) T.use("store16") return T.prefix .. "_store16(" .. p .. ", " .. x .. ", " .. n .. ");" end
function T.store_f16(p, v) return "vst1_u16(" .. p .. ", " .. f16x(v) .. ");" end
function T.store_part_f16(p, v, n) return spart16(p, f16x(v), n) end
function T.store_bf16(p, v) return "vst1_u16(" .. p .. ", " .. bf16x(v) .. ");" end
function T.store_part_bf16(p, v, n) return spart16(p, bf16x(v), n) end

return T
