-- Portable C: a "vector" of one float.  Every op returns C text.
local T = {
	name = "scalar",
	width = 1,
	vec = "float",
	-- vector registers (templates/main.lua sizes micro-tiles by them): a
	-- float each, as many as a typical FPU register file
	registers = 16,
	includes = {},
	-- tuning defaults: the micro-tiles (mq/W x nk and mq/W x nv
	-- accumulators) fit the register file
	defaults = {block_kv = 64, block_q = 64, mq = 4, nk = 4, nv = 4, kv_split = 4,
	            -- the layer's projections: 4 rows x 4 floats of accumulators
	            gemm_mr = 4, gemm_nv = 4},
	-- where its kernels build and run: any C11 compiler, any CPU
	arch = "",
	guard = "",
	cpu = {},
	cflags = "",
	-- nothing to require of the compiler or test in the CPU
	requires = "",
	attribute = "",
	detect = "1",
	-- native picks the supported target of highest rank
	rank = 0,
}

-- Helper functions, emitted only when an op used them.
T.helpers = {
	{"as_int", [[
static inline int32_t P_as_int(float x)
{
	int32_t i;
	memcpy(&i, &x, sizeof i);
	return i;
}
]]},
	{"as_float", [[
static inline float P_as_float(int32_t i)
{
	float x;
	memcpy(&x, &i, sizeof x);
	return x;
}
]]},
	{"max", [[
static inline float P_max(float a, float b)
{
	return a > b ? a : b;
}
]]},
	-- --kv-dtype q8: block b's f16 scale; its element i's int8
	{"q8", [[
static inline float P_q8d(const struct mha_q8_0 *b)
{
	return P_f16(b->d);
}

static inline float P_q8i(const struct mha_q8_0 *b, size_t i)
{
	return (float)b->qs[i];
}
]]},
}

function T.zero() return "0.0f" end
function T.set1(x) return "(" .. x .. ")" end
function T.load(p) return "(" .. p .. ")[0]" end
function T.loadu(p) return "(" .. p .. ")[0]" end
function T.load_part(p, n) return "(" .. p .. ")[0]" end
function T.store(p, v) return "(" .. p .. ")[0] = " .. v .. ";" end
function T.storeu(p, v) return "(" .. p .. ")[0] = " .. v .. ";" end
function T.store_part(p, v, n) return "(" .. p .. ")[0] = " .. v .. ";" end
function T.add(a, b) return "(" .. a .. " + " .. b .. ")" end
function T.sub(a, b) return "(" .. a .. " - " .. b .. ")" end
function T.mul(a, b) return "(" .. a .. " * " .. b .. ")" end
function T.fma(a, b, c) return "(" .. a .. " * " .. b .. " + " .. c .. ")" end
function T.max(a, b) T.use("max") return T.prefix .. "_max(" .. a .. ", " .. b .. ")" end
-- x where x >= lim, else lim (P_max gives lim where x is NaN): the
-- softmax's 2^x as the vector targets take it, the same results
function T.clamp_lo(x, lim) return T.max(x, lim) end
function T.div(a, b) return "(" .. a .. " / " .. b .. ")" end
function T.select_ge(x, lim, a, b) return "(" .. x .. " >= " .. lim .. " ? " .. a .. " : " .. b .. ")" end
function T.hsum(v) return v end
-- one vector of one lane: its sum is itself
function T.hsums(names) return names[1] end
function T.hmax(v) return v end
function T.first(v) return v end
function T.as_int(v) T.use("as_int") return T.prefix .. "_as_int(" .. v .. ")" end
function T.as_float(v) T.use("as_float") return T.prefix .. "_as_float(" .. v .. ")" end
function T.shl(a, k) return "(int32_t)((uint32_t)" .. a .. " << " .. k .. ")" end
-- a * b where x >= lim, else 0
function T.mul_ge(a, b, x, lim) return "(" .. x .. " >= " .. lim .. " ? " .. T.mul(a, b) .. " : 0.0f)" end
-- f16 and bf16 elements (--kv-dtype) as floats, by the common helpers
-- P_f16 and P_bf16 (templates/main.lua)
function T.load_f16(p) T.use("f16") return T.prefix .. "_f16((" .. p .. ")[0])" end
function T.load_part_f16(p, n) return T.load_f16(p) end
function T.load_bf16(p) T.use("bf16") return T.prefix .. "_bf16((" .. p .. ")[0])" end
function T.load_part_bf16(p, n) return T.load_bf16(p) end
-- floats stored as f16 or bf16 (--dtype's out), by the common helpers
-- P_to_f16 and P_to_bf16 (templates/main.lua)
function T.store_f16(p, v) T.use("to_f16") return "(" .. p .. ")[0] = " .. T.prefix .. "_to_f16(" .. v .. ");" end
function T.store_part_f16(p, v, n) return T.store_f16(p, v) end
function T.store_bf16(p, v) T.use("to_bf16") return "(" .. p .. ")[0] = " .. T.prefix .. "_to_bf16(" .. v .. ");" end
function T.store_part_bf16(p, v, n) return T.store_bf16(p, v) end

-- q8_0 blocks (--kv-dtype q8): the scale's helper converts by P_f16
function T.q8_scale(b)
	T.use("f16")
	T.use("q8")
	return T.prefix .. "_q8d(&" .. b .. ")"
end

return T
