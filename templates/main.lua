-- Entry point: returns the functions the generator calls (at the end):
-- generate(spec, what), what being "kernel", "header", "exp", "registry" or
-- "cflags" (for a --target list, a file choosing among several targets at
-- run time), plan(spec) and describe(target).  Decides everything about the shape
-- (plan) before any C is written; templates only spell the decisions.

local function import(path)
	return mhagen.compile(mhagen.source(path), path, _ENV)()
end

local engine = import("templates/engine.lua")

-- Check target table T (from path) against templates/ops.lua: every field
-- of its type, every required op, no op the list does not know.
local OPS = import("templates/ops.lua")
local function check_target(T, path)
	local known = {}
	for _, f in ipairs(OPS.fields) do
		if type(rawget(T, f[1])) ~= f[2] then
			error(string.format("%s: field '%s' must be a %s (%s)", path, f[1],
			                    f[2], f[3]), 0)
		end
		known[f[1]] = true
	end
	for _, op in ipairs(OPS.ops) do
		local fn = rawget(T, op[1])
		if (op[2] or fn ~= nil) and type(fn) ~= "function" then
			error(string.format("%s: lacks op '%s' (templates/ops.lua: %s, %s)",
			                    path, op[1], op[3], op[4]), 0)
		end
		for _, w in ipairs(fn ~= nil and op.with or {}) do
			if type(rawget(T, w)) ~= "function" then
				error(string.format("%s: has op '%s' but lacks op '%s', which goes with it (templates/ops.lua)",
				                    path, op[1], w), 0)
			end
		end
		known[op[1]] = true
	end
	for k in pairs(T) do
		if not known[k] then
			error(string.format("%s: '%s' is neither a field nor an op of templates/ops.lua",
			                    path, tostring(k)), 0)
		end
	end
	-- defaults that need others (templates/ops.lua, defaults): a pair's
	-- each the other, the long blocks' the narrow ones' size
	local D = T.defaults
	for _, p in ipairs({{"block_kv_narrow", "block_kv_narrow_dims"},
	                    {"block_kv_narrow_dims", "block_kv_narrow"},
	                    {"block_kv_long_dims", "block_kv_long_keys"},
	                    {"block_kv_long_keys", "block_kv_long_dims"},
	                    {"block_kv_long_dims", "block_kv_narrow"}}) do
		if D[p[1]] ~= nil and D[p[2]] == nil then
			error(string.format("%s: defaults has '%s' but lacks '%s', which goes with it (templates/ops.lua)",
			                    path, p[1], p[2]), 0)
		end
	end
end

-- The C text of runtime/mha_kvstore.h's store of a float into dtype (f16,
-- bf16, q8), between its marks.
local function store_body(dtype)
	local text = mhagen.source("runtime/mha_kvstore.h")
	local body = text:match("/%* mha_store " .. dtype .. ": begin %*/\n(.-)/%* mha_store " .. dtype .. ": end %*/")
	if not body then
		error("runtime/mha_kvstore.h: no " .. dtype .. " store between its marks", 0)
	end
	return body
end

-- Helpers every target has, before its own: scalar conversions between
-- floats and f16 or bf16 bits, for the elements code outside vectors
-- touches (--dtype, --kv-dtype).  To float exactly; from float as
-- runtime/mha_kvstore.h rounds (P_to_f16, P_to_bf16: its functions).
local function common_helpers()
	local list = {
		-- f16 (IEEE binary16) bits as a float, exactly: inf and NaN (payload
		-- kept in the high fraction bits), normals rebiased, subnormals and
		-- zeros as m * 2^-24
		{"f16", [[
static inline float P_f16(uint16_t h)
{
	const uint32_t s = (uint32_t)(h & 0x8000u) << 16;
	const uint32_t e = (uint32_t)(h >> 10) & 0x1fu, m = h & 0x3ffu;
	uint32_t u;
	float f;

	if (e == 0x1fu)
		u = s | 0x7f800000u | m << 13;
	else if (e)
		u = s | (e + 112u) << 23 | m << 13;
	else {
		f = (float)m * 0x1p-24f;
		memcpy(&u, &f, sizeof u);
		u |= s;
	}
	memcpy(&f, &u, sizeof f);
	return f;
}
]]},
		-- bf16 bits as a float: its high half
		{"bf16", [[
static inline float P_bf16(uint16_t h)
{
	const uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}
]]},
	}
	for _, d in ipairs({"f16", "bf16"}) do
		list[#list + 1] = {"to_" .. d, (store_body(d):gsub("mha_" .. d .. "_from_float%(", "P_to_" .. d .. "("))}
	end
	return list
end

-- The target table of name (templates/targets/NAME.lua); asking it for an
-- op it lacks is an error at the template line that asked.
local function load_target(name)
	local names = mhagen.targets()
	local known = false
	for _, n in ipairs(names) do
		known = known or n == name
	end
	if not known then
		error(string.format("--target: unknown target '%s' (%s, native)", name,
		                    table.concat(names, ", ")), 0)
	end
	local path = "templates/targets/" .. name .. ".lua"
	local T = import(path)
	if type(T) ~= "table" or T.name ~= name then
		error(string.format("%s: must return a table whose name is '%s'",
		                    mhagen.display(path), name), 0)
	end
	check_target(T, mhagen.display(path))
	local helpers, own = {}, {}
	for _, h in ipairs(T.helpers) do
		own[h[1]] = true
	end
	for _, h in ipairs(common_helpers()) do
		if not own[h[1]] then
			helpers[#helpers + 1] = h
		end
	end
	for _, h in ipairs(T.helpers) do
		helpers[#helpers + 1] = h
	end
	T.helpers = helpers
	-- the q8 ops a target leaves to the defaults: calls of its "q8"
	-- helpers, P_q8d (the scale) and P_q8i (the int8 values), and their
	-- product
	if not rawget(T, "q8_scale") then
		function T.q8_scale(b) T.use("q8") return T.prefix .. "_q8d(&" .. b .. ")" end
	end
	if not rawget(T, "q8_ints") then
		function T.q8_ints(b, i) T.use("q8") return T.prefix .. "_q8i(&" .. b .. ", " .. i .. ")" end
	end
	if not rawget(T, "load_q8") then
		function T.load_q8(b, i) return T.mul(T.q8_scale(b), T.q8_ints(b, i)) end
	end
	return setmetatable(T, {__index = function(_, op)
		error(string.format("target '%s' has no op '%s'", name, tostring(op)), 2)
	end})
end

-- What C code reads of target name (generator/gen.c, struct
-- mhagen_target): the facts that decide where its kernels build and run.
local function describe(name)
	local T = load_target(name)
	local D = T.defaults
	-- the key block's exceptions, "64 causal or dk + dv <= 128" (the
	-- size said once when both are the same)
	local bk = {}
	if D.block_kv_causal then
		bk[#bk + 1] = string.format("%d causal", D.block_kv_causal)
	end
	if D.block_kv_narrow then
		bk[#bk + 1] = string.format("%sdk + dv <= %d", D.block_kv_narrow == D.block_kv_causal and ""
		                            or (D.block_kv_narrow .. " "), D.block_kv_narrow_dims)
		if D.block_kv_long_dims then
			bk[#bk] = bk[#bk] .. string.format(", <= %d with %d keys or more or a run-time length",
			                                   D.block_kv_long_dims, D.block_kv_long_keys)
		end
	end
	local defaults = string.format("block-q %d, block-kv %d%s, mq %d, nk %d, nv %d",
		D.block_q, D.block_kv, #bk > 0 and (" (" .. table.concat(bk, " or ") .. ")") or "",
		D.mq, D.nk, D.nv)
	return {name = name, width = T.width, rank = T.rank, arch = T.arch,
	        guard = T.guard, cflags = T.cflags, cpu = table.concat(T.cpu, " "),
	        defaults = defaults}
end

-- A C float literal, exact and deterministic (hex).
local function hexf(x)
	if x == math.huge then
		return "INFINITY"
	elseif x == -math.huge then
		return "-INFINITY"
	end
	return string.format("%a", x) .. "f"
end

-- --kv-dtype's words as runtime/mha_abi.h's enum mha_dtype numbers them
local KV_DTYPES = {f32 = 0, f16 = 1, bf16 = 2, q8 = 3}

-- Tensor t ("q", "k", "v" or "out") of spec S: its head dim, its heads,
-- the floats of one position's row (its heads; with --packed the whole
-- packed row) and where its heads start in that row.
local function geometry(S, t)
	local d = (t == "q" or t == "k") and S.dk or S.dv
	local heads = (t == "q" or t == "out") and S.h or S.kv_heads
	if S.packed == "qkv" and t ~= "out" then
		local base = {q = 0, k = S.h * S.dk, v = (S.h + S.kv_heads) * S.dk}
		return d, heads, (S.h + S.kv_heads) * S.dk + S.kv_heads * S.dv, base[t]
	elseif S.packed == "kv" and (t == "k" or t == "v") then
		return d, heads, S.kv_heads * (S.dk + S.dv), t == "k" and 0 or S.kv_heads * S.dk
	end
	return d, heads, heads * d, 0
end

-- The loop structure for one head dimension d: full vectors and a tail.
local function dims(d, T, unroll_max)
	local W = T.width
	return {
		d = d,
		full = d // W,            -- whole vectors
		tail = d % W,             -- lanes in the last, partial vector
		n = (d + W - 1) // W,     -- vectors in all
		unrolled = d <= unroll_max,
	}
end

-- Where a kernel keeps its buffers.  Scratch (a->workspace, else malloc)
-- holds what grows with the plan's blocks: P.scratch bytes per worker
-- (tiled: a work item's query and output blocks, scores, a dense value
-- block, row state) and P.shared bytes for the whole call (rows with
-- --kv-split: the ranges' partial states pm, pl, pacc, for chunks of
-- P.chunk items).  P.at gives each array's byte offset in its scratch,
-- 64-byte aligned.  The stack keeps the rest, at most P.stack bytes: the
-- arrays counted here plus an allowance for frames (measured by
-- tests/props.c on every kernel of the test matrix).
local STACK_FRAMES = 2048
local function scratch_and_stack(S, P)
	local W = P.W
	local function vec(n) return n * W * 4 end
	P.scratch, P.shared, P.at = 0, 0, {}
	local function put(name, bytes)
		P.at[name] = P.scratch
		P.scratch = P.scratch + (bytes + 63) // 64 * 64
	end
	local stack = 0
	if P.algo == "tiled" then
		put("qt", 4 * S.dk * P.bqp)
		put("ot", 4 * S.dv * P.bqs)
		put("st", 4 * P.bks * P.mq)
		-- f16 or bf16 keys and values (--kv-dtype): each block converted
		-- once, to floats, for every query tile of the work item
		if S.kv_dtype ~= "f32" or P.pack_k then
			put("kc", 4 * P.bkx * S.dk)
		end
		if P.vstride ~= S.dv or S.kv_dtype ~= "f32" then
			put("vp", 4 * P.bkx * S.dv)
		end
		put("m", 4 * P.bqp)
		put("l", 4 * P.bqp)
		put("lim", 8 * P.bqp)
		if P.lo then
			put("lo", 8 * P.bqp)
		end
		-- the tail's rows (P.tr): q scaled, and the outputs, a row each of
		-- whole vectors
		if P.tr > 0 then
			put("tq", vec(P.tr * ((S.dk + W - 1) // W)))
			put("ta", vec(P.tr * ((S.dv + W - 1) // W)))
		end
		-- alpha, mxb; kn; the micro-kernels' accumulators and operands
		stack = 8 * P.mq + 8 * (P.mq // W) + vec(math.max((P.mq // W) * (math.max(P.nk, P.nv) + 2),
		                                              (P.pvr + 1) * (P.pvcs[1] or 0) + 1))
		-- the masks' arrays of a tile's rows: the bias's and boolean
		-- mask's row offsets (ro), the boolean mask's bits (hid) and,
		-- where the target hides lane by lane, a key column (col); the
		-- diagonal's limits (hi and jb, with a window's start lf and ja)
		if S.bias or S.bool then
			stack = stack + 8 * P.mq
		end
		if S.bool then
			stack = stack + 8 * P.mq
		end
		if S.causal or S.window_right >= 0 then
			stack = stack + (4 * P.mq + 8 * (P.mq // W)) * (P.lo and 2 or 1)
		end
		-- the tail's row state and positions; its W dot products
		if P.tr > 0 then
			stack = stack + 48 * P.tr + 4 * W + vec(W)
		end
	else
		local dp = P.v.n * W
		if P.split > 1 then
			-- pm, pl, pacc (floats, each 64-byte aligned)
			local per = P.split * P.gs * dp
			P.chunk = math.max(1, 32768 // per)
			local states = (P.chunk * P.split * P.gs + 15) // 16 * 16
			P.at.pl, P.at.pacc = 4 * states, 8 * states
			P.shared = 4 * (2 * states + (P.chunk * per + 15) // 16 * 16)
		end
		-- a work item's m, l, acc; _part's scores and query and value
		-- vectors; the merge's l and mm
		-- (whole rows, P.ro: the heads' scores of a block, and the
		-- whole-row pass's key vectors apart from the P.V pass's: scalar
		-- h8 kv2 dk128 measured 8472 bytes in all)
		-- (whole rows: also each head's rescale, al, for a P.V pass of
		-- grouped heads together)
		stack = 4 * (2 * P.gs + P.gs * dp) + 4 * (P.bk + (P.ro and 1 or 0)) * (P.ro and P.gs or 1) +
		        vec((P.k.n + P.v.n) * (P.ro and 2 or 1)) + 8 * P.gs
		-- (--dtype f16, bf16: the item's q rows as floats, qf)
		if S.dtype ~= "f32" then
			stack = stack + 4 * P.gs * S.dk + 64
		end
	end
	if S.weights then
		stack = math.max(stack, vec(1))
		-- (--dtype: the row's q as floats)
		if S.dtype ~= "f32" then
			stack = stack + 4 * S.dk
		end
	end
	P.stack = (stack + STACK_FRAMES + 1023) // 1024 * 1024
end

-- rows: adjacent key/value heads per work item at most, where an item
-- does not read whole rows (P.ro)
local KV_HEADS_MAX = 4

-- Everything decided about a kernel before it is written.
local function plan(S, T)
	local D = T.defaults
	-- (pvr, pvcs: the tiled P.V's, below; 0 and none for rows)
	local P = {W = T.width, pvr = 0, pvcs = {}}
	-- rows have a first visible key (a window)
	P.lo = S.window > 0 or S.window_left >= 0
	-- every query row's position lies within the keys' (fixed lengths,
	-- seq_q <= seq_kv, one length for all sequences): a top-left diagonal
	-- never passes seq_kv
	P.rows_within = S.varlen == "none" and S.seq_q > 0 and S.seq_q <= S.seq_kv
	-- a row's first key may lie past its limit (top-left rows past seq_kv)
	P.lo_past = P.lo and S.causal and S.align == "top-left" and not P.rows_within
	P.bk = S.block_kv > 0 and S.block_kv or
	       (S.causal and D.block_kv_causal) or D.block_kv
	P.bq = S.block_q > 0 and S.block_q or D.block_q
	-- the size of a call's q, k, v and out from which a tiled kernel
	-- prefetches what comes next (tiled.c.in; MiB, the build's
	-- MHA_PREFETCH_MIN in bytes overriding it): the target's, else 4,
	-- set on AMD Zen 3, whose prefetches fill L1 as well as L2 (AVX2
	-- against no prefetch: h8 dk64 s128 batch 8 1.07-1.11x, h12 dk64 s197
	-- batch 4 1.05-1.08x, h8 dk64 s512 causal 1.01-1.03x; batches of h8
	-- dk64 s128 of 1 and 2 items, 1 and 2 MiB, 0.98-0.99x, of 4 items
	-- 1.09x; AVX2 and AVX-512 now take 2: their tables)
	P.pfmin_mib = D.prefetch_min_mib or 4
	P.mq = S.mq > 0 and S.mq or D.mq
	P.nk = S.nk > 0 and S.nk or D.nk
	P.nv = S.nv > 0 and S.nv or D.nv
	P.k = dims(S.dk, T, S.unroll_max)
	P.v = dims(S.dv, T, S.unroll_max)
	P.group = S.h // S.kv_heads
	P.sq = S.seq_q > 0 and tostring(S.seq_q) or "seq_q"
	P.skv = S.seq_kv > 0 and tostring(S.seq_kv) or "seq_kv"
	-- the lengths the rows' limits align to: the buffers', or with
	-- --varlen the names of locals holding the sequence's own (lq queries,
	-- lkv keys; templates/main.lua's len_q and len_kv)
	P.lq = S.varlen ~= "none" and "lq" or P.sq
	P.lkv = S.varlen ~= "none" and "lkv" or P.skv
	P.omp = S.threads == "openmp"
	-- element strides between consecutive rows of one head: numbers, or
	-- with sbhd (a head's rows lie batch position rows apart, batch known
	-- only at run time) the names qs, ks, vs, os of locals that P.strides
	-- declares
	P.dyn = S.layout == "sbhd"
	local sdecl = {}
	for _, t in ipairs({"q", "k", "v", "out"}) do
		local d, _, pitch = geometry(S, t)
		local x
		if S.layout == "bhsd" then
			x = d
		elseif S.layout == "bshd" then
			x = pitch
		else
			x = (t == "out" and "o" or t) .. "s"
			sdecl[x] = x .. " = batch * " .. pitch
		end
		P[(t == "out" and "o" or t) .. "stride"] = x
	end
	-- the declarations of the dynamic strides among names ("qs", ...), for
	-- a function where batch is in scope; nothing when strides are numbers
	function P.strides(indent, ...)
		local out = {}
		for _, x in ipairs({...}) do
			if sdecl[x] then
				out[#out + 1] = sdecl[x]
			end
		end
		if #out == 0 then
			return ""
		end
		return indent .. "const size_t " .. table.concat(out, ", ") .. ";"
	end
	if P.bk % P.W ~= 0 then
		error(string.format("--block-kv %d is not a multiple of the %s vector width %d",
		                    P.bk, T.name, P.W), 0)
	end
	-- tiled: query tiles x key blocks with register-blocked micro-kernels;
	-- rows: one query row at a time (decode: few queries, long keys)
	if S.algo ~= "auto" then
		P.algo = S.algo
	elseif S.seq_q > 0 and S.seq_q <= 4 then
		P.algo = "rows"
	else
		P.algo = "tiled"
	end
	-- the tiled softmax takes its exps this many vectors at a time
	-- (N_exps, N_exp2s in vexp.c.in; 1: one at a time, neither)
	P.exp_group = P.algo == "tiled" and D.exp_group or 1
	-- and a remainder of at least exp_rest vectors (fewer than
	-- exp_group) that many at a time before the rest one at a time, where
	-- the target sets it (1: none)
	P.exp_rest = P.exp_group > 1 and D.exp_rest or 1
	if P.exp_rest < 1 or (P.exp_rest > 1 and P.exp_rest >= P.exp_group) then
		error(string.format("target %s: exp_rest %d is not between 1 and exp_group %d",
		                    T.name, P.exp_rest, P.exp_group), 0)
	end
	-- the tiled micro-kernels' loops (scores over the head dim, the
	-- rows-in-lanes P.V over a block's keys) unrolled this many times by the
	-- compiler (#pragma GCC unroll, gcc and clang; 1: as it decides).  The
	-- P.V with P.pvr rows broadcast is not: on AVX2 4 times measured slower
	-- on a quiet host (templates/targets/avx2.lua)
	P.unroll_qk = D.unroll_qk or 1
	P.unroll_pv = D.unroll_pv or 1
	-- on the causal (or a window's) diagonal, each vector of a tile's rows
	-- takes the scores of the keys up to its own last row's limit, not the
	-- tile's (templates/tiled.c.in, SEG), unless the target's
	-- diag_segments is false
	P.segs = D.diag_segments ~= false
	if P.algo == "rows" then
		-- each row's keys in P.split ranges whose softmax states are
		-- merged after, so that few rows still keep every thread busy; a
		-- work item takes P.gs query heads that share a key/value head, so
		-- a key block is read from memory once for them.  At most 32 KiB
		-- of accumulators per item (on the stack), 128 KiB of partial
		-- states in all (scratch).
		local dp = P.v.n * P.W
		P.split = S.kv_split > 0 and S.kv_split or
		          (P.omp and math.max(1, math.min(D.kv_split, 32768 // dp)) or 1)
		if P.split * dp > 32768 then
			error(string.format("--kv-split %d x head dim %d floats exceed the 128 KiB of partial states; lower --kv-split",
			                    P.split, S.dv), 0)
		end
		P.gs = 1
		for g = P.group, 1, -1 do
			if P.group % g == 0 and g * dp <= 8192 and P.split * g * dp <= 32768 then
				P.gs = g
				break
			end
		end
		-- where key/value heads are interleaved in a row (not bhsd), an
		-- item takes the query heads of P.kvs adjacent key/value heads, so
		-- that the rows it reads of one position lie together: a head's row
		-- alone (256 bytes of f16 at dk 128) is a small part of a page,
		-- which the hardware prefetchers do not follow.  With whole,
		-- unrolled vectors (P.ro) the item takes up to all of them and reads
		-- each position's key row once, in order, for every head's score,
		-- fetching its value row for the pass that follows, in blocks of
		-- max(8, W) keys.  Measured on AVX2 (decode h32 dk128 kv2048, cold):
		-- f16 0.65x -> 0.40-0.43x of the old f32 kernel's time, f32 1.12-1.15x faster.
		-- Otherwise f16 and bf16 take up to KV_HEADS_MAX heads.
		P.kvs = 1
		P.ro = false
		if P.gs == P.group and S.layout ~= "bhsd" then
			local whole = P.k.tail == 0 and P.v.tail == 0 and P.k.unrolled and P.v.unrolled
			-- (q8: 16, measured faster than 8 and 32 keys)
			local bk = S.block_kv > 0 and S.block_kv or math.max(S.kv_dtype == "q8" and 16 or 8, P.W)
			local most = whole and S.kv_heads or (S.kv_dtype ~= "f32" and KV_HEADS_MAX or 1)
			for n = math.min(most, S.kv_heads), 1, -1 do
				local g = n * P.group
				-- the scores of the block for every head on the stack too
				local fits = g * dp <= 8192 and (not whole or g * (dp + bk) <= 9216)
				if S.kv_heads % n == 0 and fits and P.split * g * dp <= 32768 then
					P.kvs = n
					break
				end
			end
			P.gs = P.group * P.kvs
			P.ro = whole and P.kvs > 1
			if P.ro then
				P.bk = bk
			end
		end
	end
	if P.algo == "tiled" then
		-- narrow heads (dk + dv floats at most the target's
		-- block_kv_narrow_dims) take block_kv_narrow keys per block
		-- unless --block-kv or causal says otherwise; so do heads of up
		-- to block_kv_long_dims whose keys number block_kv_long_keys or
		-- more, or are known only at run time, where the target sets them
		-- (a short key length's few blocks keep the wider block, whose
		-- last one the rule below can even out)
		local dkv = S.dk + S.dv
		if S.block_kv == 0 and not S.causal and D.block_kv_narrow and
		   (dkv <= D.block_kv_narrow_dims or
		    (D.block_kv_long_dims and dkv <= D.block_kv_long_dims and
		     (S.seq_kv == 0 or S.seq_kv >= D.block_kv_long_keys))) then
			P.bk = D.block_kv_narrow
		end
		-- keys of a fixed length whose last block would hold under a
		-- quarter of P.bk (a thin block pays the P.V micro-kernels' loads
		-- and stores of the output block for a few keys): one block fewer
		-- where a block's key and value rows then still take at most 40
		-- KiB (about L1), else as many blocks, even; whole vectors and
		-- multiples of 8 keys.  make bench-ab against P.bk: AVX2 h12
		-- dk64 s197, 64 -> 72 keys 1.018-1.024x, batch 4 1.009-1.019x
		-- (even, 56: 0.993-0.995x); AVX-512 h8 dk64 s136 batch 4, 128 ->
		-- 80 1.061-1.068x (one block of 144: 1.038x), h16 dk64 s260
		-- batch 4 -> 96 0.998-1.004x (144: 0.971-0.981x)
		if S.block_kv == 0 and S.seq_kv > 0 and S.varlen == "none" then
			local n = (S.seq_kv + P.bk - 1) // P.bk
			if n > 1 and (S.seq_kv - (n - 1) * P.bk) * 4 < P.bk then
				local step = math.max(8, P.W)
				local function even(k)
					return ((S.seq_kv + k - 1) // k + step - 1) // step * step
				end
				local fewer = even(n - 1)
				P.bk = fewer * (S.dk + S.dv) * 4 <= 40960 and fewer or even(n)
			end
		end
		if P.mq % P.W ~= 0 then
			error(string.format("--mq %d is not a multiple of the %s vector width %d",
			                    P.mq, T.name, P.W), 0)
		end
		-- P.pvr: the P.V micro-kernel takes P.pvr rows of weights
		-- broadcast against a chunk of P.pvcs[c] vectors of a value row
		-- (the output's columns in vector lanes), the output block
		-- row-major and a tile's last block writing its rows to out
		-- directly, each times its factor: no transpose (tiled.c.in); 0:
		-- rows in vector lanes against --nv value columns broadcast, the
		-- output block transposed.  Rows a divisor of the vector width, so
		-- that a group of them lies in one vector of the scores (one key
		-- count of the causal diagonal's).  Its accumulators, operands and
		-- a broadcast fill the registers at most.  The target's default
		-- (pv_rows), where dv is whole vectors (and at most its pv_dv,
		-- where set), unless --nv asks for rows in lanes (nv columns).
		P.pvr = D.pv_rows or 0
		-- and where the rows' earlier sums enter (times alpha): after the
		-- block's loop, its sums from 0 (its first FMAs wait on no load of
		-- the output block), or where the target's pv_alpha_first is set
		-- before it, loaded and scaled into the accumulators
		P.pv_alpha_first = D.pv_alpha_first or false
		if S.nv > 0 or P.W == 1 or P.W % math.max(P.pvr, 1) ~= 0 or S.dv % P.W ~= 0 or
		   S.dv > (D.pv_dv or S.dv) then
			P.pvr = 0
		end
		-- P.pvcs: the vectors of each of a row's column chunks, as even
		-- as the registers allow
		if P.pvr > 0 then
			local most = math.max(1, (T.registers - 1) // (P.pvr + 1))
			local n = S.dv // P.W
			local chunks = (n + most - 1) // most
			local each = (n + chunks - 1) // chunks
			for c = 1, chunks do
				P.pvcs[c] = c < chunks and each or n - (chunks - 1) * each
			end
		end
		-- the transposed query and output blocks live in scratch: keep
		-- them within 256 KiB each, shrinking the default query block for
		-- large head dims
		local d = math.max(S.dk, S.dv)
		if S.mq == 0 then
			-- a default micro-tile wider than the block allows narrows
			while P.mq > P.W and d * P.mq > 65536 do
				P.mq = P.mq - P.W
			end
		end
		if S.block_q == 0 and d * P.bq > 65536 then
			-- as many whole micro-tiles as fit (Intel Xeon guest, h8 dk256
			-- s1024 causal, 256 rows against the 192 halving gave: AVX2
			-- 1.019x, AVX-512 1.023x)
			P.bq = math.max(65536 // d // P.mq * P.mq, P.mq)
		end
		if S.seq_q > 0 and (P.bq > S.seq_q or
		                    (S.block_q == 0 and S.seq_q <= P.bq * 3 // 2)) then
			-- one block, rather than a full one and a thin remainder
			-- (measured: h12 dk64 s197 1.05-1.08x faster on avx2 and
			-- avx512); where the query block cannot hold them all, two
			-- of half the rows each, in whole micro-tiles (AVX-512 h16
			-- dk128 s577: 320 + 257 rows 1.034x against 512 + 65, 1.005x
			-- against 384 + 193)
			P.bq = S.seq_q
			if S.block_q == 0 and d * P.bq > 65536 then
				P.bq = ((S.seq_q + 1) // 2 + P.mq - 1) // P.mq * P.mq
			end
		end
		-- P.bqx: where the rows are counted at run time (no fixed --seq,
		-- or --varlen sequences of up to a --seq past a block) and
		-- --block-q is the default, a block takes every row left when
		-- P.bqx or fewer are, so that a full block and a thin remainder
		-- are one (the fixed lengths' rule above, at run time): up to 3/2
		-- of P.bq, within the 256 KiB query block
		P.bqx = P.bq
		if S.block_q == 0 and (S.seq_q == 0 or (S.varlen ~= "none" and S.seq_q > P.bq)) then
			P.bqx = math.max(P.bq, math.min(P.bq * 3 // 2, 65536 // d // P.mq * P.mq))
		end
		-- query rows of a block, padded to whole micro-tiles
		P.bqp = (P.bqx + P.mq - 1) // P.mq * P.mq
		-- P.fixed: the work items (a block of query rows of a head)
		-- cost the same, one block per head with fixed lengths and no
		-- key counts per batch item: OpenMP's threads take fixed even
		-- shares of them (work.c.in), the same on every call, then
		-- what the others have not begun, rather than one at a time to
		-- whichever is free
		P.fixed = S.seq_q > 0 and P.bq >= S.seq_q and not S.padding and
		          S.varlen == "none"
		-- P.lpt: causal work items of several query blocks a head cost
		-- more the later their rows (they see more keys): tiled.c.in
		-- hands them out last block first
		P.lpt = S.causal and (S.seq_q == 0 or P.bq < S.seq_q)
		-- the output block of the rows-in-lanes P.V is stored transposed,
		-- a column of bqs floats per head dim; an odd number of cache lines
		-- per column spreads a micro-tile's columns over every cache set,
		-- where an even one piles them on a few (256 or 384 rows unpadded
		-- measured 0.91x and 0.96x of 192 on AVX-512, when the query block
		-- was stored so too; it is now stored micro-tile by micro-tile,
		-- tiled.c.in)
		P.bqs = (P.bqp + 15) // 16
		P.bqs = (P.bqs % 2 == 0 and P.bqs + 1 or P.bqs) * 16
		-- P.tr: a block's rows past its last whole vector (tiled.c.in's
		-- tail), taken a row at a time, keys in vector lanes, instead of
		-- in a vector of W rows mostly empty: where every block has 0 or
		-- P.tr such rows (fixed lengths) and the rows' work is less.  Per key,
		-- a vector of rows costs dk + dv FMAs; each row's dot product
		-- ceil(dk/W) of them plus about 3 ops of horizontal sums per key
		-- (templates/ops.lua hsums), its P.V ceil(dv/W): taken at 3/4 of
		-- the vector's cost or less where the rows would take a tile of
		-- their own (its own passes too), at 2/5 where the last vector of
		-- a tile.  make bench-ab on the Intel Xeon guest, kernels of
		-- run-time lengths with and without a tail: AVX-512 h8 dk64, a
		-- tile of its own (64 or 96 rows + t), t = 1: 1.06-1.16x, 4:
		-- 1.055x, 6: 1.029x, 8: 0.997x; a tile's last vector (96 + 16 +
		-- t), t = 5: 1.003x, 6: 0.980x, 7: 0.971x, 8: 0.955x.  AVX2 h8
		-- dk64, its own tile (64 + t) t = 1: 1.101x, 3: 1.055x, 5: 1.049x;
		-- a last vector (64 + 8 + t) t = 1: 1.041x, 3: 1.002x, 5: 0.997x
		-- With it, P.tr_all: every work item has the tail (tr is P.tr);
		-- P.tr_short: an item has fewer than W rows, only the tail's (all
		-- of them when P.tr_only).  Where the rows are counted at run time
		-- (no fixed --seq, --varlen), P.tr_rt: a block's tr = rows % W
		-- rows are the tail's when they are P.tr or fewer and would take
		-- a tile of their own, P.trv or fewer and would take a tile's
		-- second vector (else none: its last tile takes them)
		P.tr, P.trv, P.tr_all, P.tr_short, P.tr_only, P.tr_rt = 0, 0, false, false, false, false
		local function vecs(n) return (n + P.W - 1) // P.W end
		local function cheap(t, own)
			local c = t * (vecs(S.dk) + vecs(S.dv) + 3)
			return own and 4 * c <= 3 * (S.dk + S.dv) or 5 * c <= 2 * (S.dk + S.dv)
		end
		if P.W > 1 and S.seq_q > 0 and S.varlen == "none" then
			local nqb = (S.seq_q + P.bq - 1) // P.bq
			local rows = S.seq_q - (nqb - 1) * P.bq
			local last = rows % P.W
			local full = nqb > 1 and P.bq % P.W or 0
			local t = last > 0 and last or full
			local own = (full == 0 or P.bq % P.mq < P.W) and (last == 0 or rows % P.mq < P.W)
			if t > 0 and (full == 0 or full == t) and (last == 0 or last == t) and cheap(t, own) then
				P.tr = t
				P.tr_all = nqb == 1 or (full == t and last == t)
				P.tr_short = S.seq_q - (nqb - 1) * P.bq < P.W
				P.tr_only = nqb == 1 and S.seq_q < P.W
			end
		elseif P.W > 1 then
			while P.tr + 1 < P.W and cheap(P.tr + 1, true) do
				P.tr = P.tr + 1
			end
			while P.trv + 1 <= P.tr and P.mq > P.W and cheap(P.trv + 1, false) do
				P.trv = P.trv + 1
			end
			P.tr_rt = P.tr > 0
			P.tr_short = P.tr_rt
		end
		if d * P.bqp > 65536 then
			error(string.format("--block-q %d: head dim %d x %d floats exceed the 256 KiB query block; lower --block-q",
			                    P.bq, d, P.bqp), 0)
		end
		-- every scratch buffer of a work item (tiled.c.in): query and
		-- output blocks, scores, a dense copy of a value block when the
		-- layout strides values, row state; at most 4 MiB per worker,
		-- shrinking the default key block for large dv
		-- keys copied densely per block where the layout strides them
		-- (f32; 16-bit keys are converted into the same buffer): rows
		-- h*dk floats apart share a few L1 sets, which each query tile's
		-- pass over the block keeps evicting (1.03x on h8 dk64 s128)
		P.pack_k = S.kv_dtype == "f32" and P.kstride ~= S.dk
		-- P.absorb: where the keys are counted at run time (no fixed
		-- --seq-kv, --varlen, padding), a last block of fewer than a
		-- quarter of P.bk keys joins the one before (the thin-block
		-- rule above, at run time): a block holds up to P.bkx keys, a
		-- tail row's scores P.bks floats (whole vectors).  make
		-- bench-ab on the Intel Xeon guest, kernels of run-time lengths
		-- against whole blocks (last ones of 5 and 1 keys): AVX-512
		-- h12 dk64 s197 1.025x, batch 4 1.014x, h16 dk64 s257 1.013x,
		-- h8 dk64 s577 1.011x; AVX2 s197 1.012x; without a remainder
		-- (s128, s512 causal) and causal s520 (its last 8 keys seen by
		-- the last tile alone) 0.999-1.003x
		P.absorb = S.seq_kv == 0 or S.varlen ~= "none" or S.padding
		local function bkx(bk)
			return P.absorb and bk + bk // 4 - 1 or bk
		end
		local function stack_floats(bk)
			bk = bkx(bk)
			local conv = S.kv_dtype ~= "f32"
			local vp = (P.vstride ~= S.dv or conv) and bk * S.dv or 0
			local kp = (conv or P.pack_k) and bk * S.dk or 0
			local tail = P.tr * ((S.dk + P.W - 1) // P.W + (S.dv + P.W - 1) // P.W) * P.W
			return S.dk * P.bqp + S.dv * P.bqs + 4 * P.bqp + bk * P.mq + vp + kp + 2 * P.mq + tail
		end
		if S.block_kv == 0 then
			while P.bk > P.W and P.bk > 8 and stack_floats(P.bk) > 1048576 do
				P.bk = P.bk // 2
			end
		end
		if stack_floats(P.bk) > 1048576 then
			error(string.format("--block-kv %d: blocks of %d keys x dv %d take %d KiB of scratch (at most 4096 KiB); lower --block-kv",
			                    P.bk, P.bk, S.dv, stack_floats(P.bk) * 4 // 1024), 0)
		end
		P.bkx = bkx(P.bk)
		P.bks = (P.bkx + P.W - 1) // P.W * P.W
	end
	scratch_and_stack(S, P)
	return P
end

-- The knobs in effect for spec, for the C side (generator/gen.c,
-- mhagen_plan): each under its field name (generator/knobs.c), with what
-- unroll_max decides as unroll_k and unroll_v.  kv_split is the rows
-- algorithm's only; nv is 0 where P.V takes rows broadcast (P.pvr: no
-- --nv; --nv 0 is the default).
local function knobs_in_effect(spec)
	local P = plan(spec, load_target(spec.target))
	return {algo = P.algo, block_q = P.bq, block_kv = P.bk, mq = P.mq,
	        nk = P.nk, nv = P.pvr > 0 and 0 or P.nv, unroll_k = P.k.unrolled,
	        unroll_v = P.v.unrolled, kv_split = P.split}
end

-- The C expression of max(0, i + shift + d) for query row i (a C
-- expression), shift being where the causal diagonal lies (seq_kv - seq_q
-- bottom-right, 0 top-left; with --varlen the sequence's own lengths): a
-- key position relative to row i's own.
local function from_row(S, P, i, d)
	local k
	if S.causal and S.align == "top-left" then
		k = d
	elseif S.seq_q > 0 and S.varlen == "none" then
		k = S.seq_kv - S.seq_q + d
	end
	if k == 0 then
		return "(" .. i .. ")"
	elseif k and k > 0 then
		return "(" .. i .. " + " .. k .. ")"
	elseif k then
		return "(" .. i .. " > " .. -k .. " ? " .. i .. " - " .. -k .. " : 0)"
	end
	local up = i .. " + " .. P.lkv .. (d > 0 and (" + " .. d) or "")
	local down = P.lq .. (d < 0 and (" + " .. -d) or "")
	local sub = P.lq .. (d < 0 and (" - " .. -d) or "")
	return "(" .. up .. " > " .. down .. " ? " .. up .. " - " .. sub .. " : 0)"
end

-- The C expression for how many keys query row i (a C expression) may see,
-- before padding: keys up to i + shift + right (causal's right side is 0),
-- at most seq_kv (with --varlen, the sequence's keys lkv; its rows i are
-- below lq); decided here from what the spec fixes.
local function limit_expr(S, P, i)
	if not S.causal and S.window_right < 0 then
		return P.lkv
	end
	local e = from_row(S, P, i, (S.causal and 0 or S.window_right) + 1)
	if S.causal and (S.align ~= "top-left" or P.rows_within) then
		return e -- the diagonal never passes seq_kv
	end
	return "(" .. e .. " < " .. P.lkv .. " ? " .. e .. " : " .. P.lkv .. ")"
end

-- The C expression of query row i's first visible key (P.lo), c the name
-- of its limit_expr.  --window N counts back from the row's causal limit
-- (from seq_kv without causal); a top-left row past seq_kv counts from its
-- own position i + 1, not from the clipped limit.  --window-left L: from i +
-- shift - L.
local function lo_expr(S, P, i, c)
	if S.window > 0 then
		if S.causal and S.align == "top-left" and not P.rows_within then
			return from_row(S, P, i, 1 - S.window)
		end
		return c .. " > " .. S.window .. " ? " .. c .. " - " .. S.window .. " : 0"
	end
	return from_row(S, P, i, -S.window_left)
end

-- Offset of row (b, s, head) of tensor t ("q", "k", "v" or "out") from its
-- pointer (C expressions; with sbhd, batch is in scope; with --varlen
-- packed, sequence b's rows start at cu_seqlens_q[b] or cu_seqlens_k[b],
-- in scope).
local function row_offset(S, t, b, s, head)
	local d, heads, pitch = geometry(S, t)
	local sq = (t == "q" or t == "out") and S.seq_q or S.seq_kv
	local seq = sq > 0 and tostring(sq) or ((t == "q" or t == "out") and "seq_q" or "seq_kv")
	if S.varlen == "packed" then
		local cu = (t == "q" or t == "out") and "cu_seqlens_q" or "cu_seqlens_k"
		return "((size_t)" .. cu .. "[" .. b .. "] + " .. s .. ") * " .. pitch .. " + " .. head .. " * " .. d
	elseif S.layout == "bhsd" then
		return "((" .. b .. " * " .. heads .. " + " .. head .. ") * " .. seq .. " + " .. s .. ") * " .. d
	elseif S.layout == "sbhd" then
		return "(" .. s .. " * batch + " .. b .. ") * " .. pitch .. " + " .. head .. " * " .. d
	elseif pitch ~= heads * d then
		return "(" .. b .. " * " .. seq .. " + " .. s .. ") * " .. pitch .. " + " .. head .. " * " .. d
	end
	return "((" .. b .. " * " .. seq .. " + " .. s .. ") * " .. heads .. " + " .. head .. ") * " .. d
end

-- The C expression of where batch item b's and head hh's [seq_q][seq_kv]
-- plane of the bias or boolean mask base starts, by --mask-dims: base
-- itself when one plane serves all.
local function plane_at(S, P, base, b, hh)
	local idx
	if S.mask_b and S.mask_h then
		idx = "(" .. b .. " * " .. S.h .. " + " .. hh .. ")"
	elseif S.mask_b or S.mask_h then
		idx = S.mask_b and b or hh
	else
		return base
	end
	return base .. " + " .. idx .. " * " .. P.sq .. " * " .. P.skv
end

-- Lines applying fn(index, offset) to the full vectors of a dimension:
-- one statement per vector when unrolled, else a loop.
local function vloop(dim, W, indent, fn)
	if dim.full == 0 then
		return "/* no full vectors */"
	end
	if dim.unrolled or dim.full == 1 then
		local out = {}
		for c = 0, dim.full - 1 do
			out[#out + 1] = fn(tostring(c), tostring(c * W))
		end
		return table.concat(out, "\n" .. indent)
	end
	return "for (size_t c = 0; c < " .. dim.full .. "; ++c)\n" .. indent ..
	       "\t" .. fn("c", W == 1 and "c" or "c * " .. W)
end

-- The kernel's arguments, in the lines its prototypes wrap them: the
-- contract's mha_kernel_fn (runtime/mha_abi.h; the test builds check every
-- kernel against it).  NAME_weights adds the weights output.
local ARGS = {
	{"const float *q", "const float *k", "const float *v", "float *out"},
	{"size_t batch", "size_t seq_q", "size_t seq_kv"},
	{"const int32_t *kv_len", "const float *bias"},
}

local ARGS_FLAT = {}
for _, group in ipairs(ARGS) do
	for _, a in ipairs(group) do
		ARGS_FLAT[#ARGS_FLAT + 1] = a
	end
end

-- "void NAME(...)" with the kernel's arguments, extra ones (a list of
-- "type name") after them.
local function signature(name, extra)
	local lines = {}
	for i, group in ipairs(ARGS) do
		local args = {table.unpack(group)}
		if i == #ARGS then
			for _, a in ipairs(extra or {}) do
				args[#args + 1] = a
			end
		end
		lines[i] = table.concat(args, ", ")
	end
	return "void " .. name .. "(" .. table.concat(lines, ",\n        ") .. ")"
end

-- struct mha_args as the kernel contract (runtime/mha_abi.h, embedded with
-- the templates) defines it, between its marks: each kernel carries a copy,
-- guarded, so that it stays self-contained.
local function args_struct()
	local text = mhagen.source("runtime/mha_abi.h")
	local body = text:match("/%* mha_args: begin %*/\n(.-)/%* mha_args: end %*/")
	if not body then
		error("runtime/mha_abi.h: no struct mha_args between its marks", 0)
	end
	return body
end

-- The inputs of struct mha_args a kernel of spec S reads: {field, C type};
-- the first nine are the 9-argument form's (ARGS), the others the
-- optional inputs, each read only by the kernels whose spec asks for it.
local function inputs(S)
	local list = {}
	for _, a in ipairs(ARGS_FLAT) do
		local ty, name = a:match("^(.-)([%w_]+)$")
		ty = ty:gsub(" $", "")
		if (name == "k" or name == "v") and S.kv_dtype ~= "f32" then
			-- f16 or bf16 bits, or q8_0 blocks (--kv-dtype)
			ty = S.kv_dtype == "q8" and "const struct mha_q8_0 *" or "const uint16_t *"
		elseif (name == "q" or name == "out") and S.dtype ~= "f32" then
			-- f16 or bf16 bits (--dtype)
			ty = ty:gsub("float", "uint16_t")
		end
		list[#list + 1] = {name, ty}
	end
	if S.alibi == "slopes" then
		list[#list + 1] = {"alibi_slopes", "const float *"}
	end
	if S.sinks then
		list[#list + 1] = {"sinks", "const float *"}
	end
	if S.lse then
		list[#list + 1] = {"lse", "float *"}
	end
	if S.bool then
		list[#list + 1] = {"bool_mask", "const uint8_t *"}
	end
	if S.keys then
		list[#list + 1] = {"key_mask", "const uint8_t *"}
	end
	if S.varlen == "padded" then
		list[#list + 1] = {"q_len", "const int32_t *"}
	elseif S.varlen == "packed" then
		list[#list + 1] = {"cu_seqlens_q", "const int32_t *"}
		list[#list + 1] = {"cu_seqlens_k", "const int32_t *"}
	end
	return list
end

-- Whether a kernel of spec S exports the 9-argument NAME (and with
-- --weights NAME_weights): when it reads no input beyond those arguments,
-- whose tensors are floats (not with --dtype or --kv-dtype).
local function plain_form(S)
	return #inputs(S) == #ARGS_FLAT and S.kv_dtype == "f32" and S.dtype == "f32"
end

-- ALiBi's slopes by ggml's rule from max_bias, for h heads: with n the
-- largest power of two up to h, head i < n has m0^(i+1) and the others
-- m1^(2(i-n)+1), m0 = 2^(-max_bias/n), m1 = 2^(-max_bias/2/n).  Computed in
-- double, rounded to float (runtime/mha_ref.c does the same).
local function max_bias_slopes(h, max_bias)
	local n = 1
	while n * 2 <= h do
		n = n * 2
	end
	local m0, m1 = 2.0 ^ (-max_bias / n), 2.0 ^ (-(max_bias / 2.0) / n)
	local out = {}
	for i = 0, h - 1 do
		out[#out + 1] = i < n and m0 ^ (i + 1) or m1 ^ (2 * (i - n) + 1)
	end
	return out
end

-- Score modifiers: what changes s = scale * q.k before the bias and the
-- masks, in this order.  The one place a score-changing feature is
-- written: the templates (tiled, rows, weights) apply mods.vec to a vector
-- x of scores, at.row and at.key being vectors of the rows' and keys'
-- positions (the row's counted on the causal diagonal: i + seq_kv - seq_q
-- bottom-right, i top-left) and at.slope the head's ALiBi slope (a float
-- expression, from the array slopes).
local function modifiers(S, T, N)
	local M = {}
	local list = {}
	-- each modifier is a function of (x, at) and says what it reads of at:
	-- positions (at.row, at.key: a row's and a key's positions as vectors)
	-- and slope (at.slope: the head's ALiBi slope); the templates build
	-- only what some modifier reads (M.positions, M.slope)
	local function add(needs, f)
		list[#list + 1] = f
		for what in pairs(needs) do
			M[what] = true
		end
	end
	if S.softcap > 0 then
		-- cap * tanh(x / cap)
		add({}, function(x)
			local y = T.mul(x, T.set1(hexf(1.0 / S.softcap)))
			return T.mul(T.set1(hexf(S.softcap)), N .. "_tanh(" .. y .. ")")
		end)
	end
	if S.alibi ~= "none" then
		-- x - slope * |row - key|
		add({positions = true, slope = true}, function(x, at)
			local d = T.sub(at.row, at.key)
			return T.fma(T.set1("-" .. at.slope), T.max(d, T.sub(T.zero(), d)), x)
		end)
	end
	M.any = #list > 0
	-- the table of at's fields a template passes M.vec: row, key when
	-- some modifier reads positions, slope when some reads it (C text)
	function M.at(row, key, slope)
		return {row = M.positions and row or nil, key = M.positions and key or nil,
		        slope = M.slope and slope or nil}
	end
	function M.vec(x, at)
		for _, f in ipairs(list) do
			x = f(x, at)
		end
		return x
	end
	-- C text the modifiers need before the kernel: tanh, fixed slopes
	function M.prelude()
		local out = {}
		local V = T.vec
		if S.softcap > 0 then
			-- |y| clamped to 9 (tanh(9) rounds to 1); below 1/4 the odd
			-- Taylor series to y^9 (truncation < 1e-8 relative), from 1/4
			-- on (1 - t) / (1 + t) with t = exp(-2|y|) (no cancellation
			-- worse than 1 - e^-0.5): a few ulp relative everywhere
			local function c(x) return T.set1(hexf(x)) end
			out[#out + 1] = "/* tanh(y) (for --softcap), a few ulp. */\n" ..
				"static inline " .. V .. " " .. N .. "_tanh(" .. V .. " y)\n{\n" ..
				"\tconst " .. V .. " ay = " .. T.max("y", T.sub(T.zero(), "y")) .. ";\n" ..
				"\tconst " .. V .. " a = " .. T.select_ge("ay", c(9.0), c(9.0), "ay") .. ";\n" ..
				"\tconst " .. V .. " z = " .. T.mul("a", "a") .. ";\n" ..
				"\t" .. V .. " p = " .. c(62.0 / 2835.0) .. ";\n" ..
				"\tp = " .. T.fma("p", "z", c(-17.0 / 315.0)) .. ";\n" ..
				"\tp = " .. T.fma("p", "z", c(2.0 / 15.0)) .. ";\n" ..
				"\tp = " .. T.fma("p", "z", c(-1.0 / 3.0)) .. ";\n" ..
				"\tp = " .. T.fma(T.mul("p", "z"), "a", "a") .. ";\n" ..
				"\tconst " .. V .. " t = " .. N .. "_exp(" .. T.mul(c(-2.0), "a") .. ");\n" ..
				"\tconst " .. V .. " r = " .. T.select_ge("a", c(0.25), T.div(T.sub(c(1.0), "t"), T.add(c(1.0), "t")), "p") .. ";\n" ..
				"\treturn " .. T.select_ge("y", T.zero(), "r", T.sub(T.zero(), "r")) .. ";\n}\n"
		end
		if S.alibi == "max-bias" then
			local sl = {}
			for i, x in ipairs(max_bias_slopes(S.h, S.max_bias)) do
				sl[#sl + 1] = (i - 1) % 4 == 0 and ("\n\t" .. hexf(x)) or (" " .. hexf(x))
			end
			out[#out + 1] = "/* ALiBi slopes of the " .. S.h .. " heads, by ggml's rule from max_bias " ..
				hexf(S.max_bias) .. ". */\n" ..
				"static const float " .. N .. "_slopes[" .. S.h .. "] = {" .. table.concat(sl, ",") .. "\n};\n"
		end
		if M.positions then
			local iota = {}
			for i = 0, T.width - 1 do
				iota[#iota + 1] = tostring(i) .. ".0f"
			end
			out[#out + 1] = "/* 0, 1, ...: lane positions. */\n" ..
				"static const float " .. N .. "_iota[" .. T.width .. "] = {" .. table.concat(iota, ", ") .. "};\n"
		end
		return table.concat(out, "\n")
	end
	-- A statement setting float inv to the factor that turns a row's
	-- unnormalized sum into its output: 1 / l, with --sinks 1 / (l +
	-- exp(sink - m)) computed as e / (l e + exp(sink - mf)), mf = max(m,
	-- sink) and e = exp(m - mf), so that no exp overflows; 0 when the row
	-- saw no key (l = 0), sink or not.
	function M.norm(indent, inv, l, m, sink)
		if not S.sinks then
			return indent .. "const float " .. inv .. " = " .. l .. " > 0.0f ? 1.0f / " .. l .. " : 0.0f;"
		end
		local function e(x)
			return T.first(N .. "_exp(" .. T.set1(x) .. ")")
		end
		return indent .. "float " .. inv .. " = 0.0f;\n" ..
			indent .. "if (" .. l .. " > 0.0f) {\n" ..
			indent .. "\t/* the sink's logit joins the denominator */\n" ..
			indent .. "\tconst float sk = " .. sink .. ", mr = " .. m .. ";\n" ..
			indent .. "\tconst float mf = mr > sk ? mr : sk;\n" ..
			indent .. "\tconst float e = " .. e("mr - mf") .. ";\n" ..
			indent .. "\t" .. inv .. " = e / (" .. l .. " * e + " .. e("sk - mf") .. ");\n" ..
			indent .. "}"
	end
	-- A statement storing in dst (a float lvalue) the natural log of the
	-- row's softmax denominator, from its running max m and the sum l of
	-- exp(s - m): m + log(l), -inf when the row saw no key (l = 0); with
	-- --sinks the sink's term joins (as in M.norm), so a row that saw no
	-- key has the sink's logit.
	function M.lse(indent, dst, l, m, sink)
		if not S.sinks then
			return indent .. dst .. " = " .. l .. " > 0.0f ? " .. m .. " + logf(" .. l .. ") : -INFINITY;"
		end
		local function e(x)
			return T.first(N .. "_exp(" .. T.set1(x) .. ")")
		end
		return indent .. "if (" .. l .. " > 0.0f) {\n" ..
			indent .. "\tconst float sk = " .. sink .. ", mr = " .. m .. ";\n" ..
			indent .. "\tconst float mf = mr > sk ? mr : sk;\n" ..
			indent .. "\t" .. dst .. " = mf + logf(" .. l .. " * " .. e("mr - mf") .. " + " .. e("sk - mf") .. ");\n" ..
			indent .. "} else {\n" ..
			indent .. "\t" .. dst .. " = " .. sink .. ";\n" ..
			indent .. "}"
	end
	-- the slopes' array inside a kernel body (a C expression)
	M.slopes = S.alibi == "slopes" and "alibi_slopes" or (N .. "_slopes")
	-- the C expression (float) of the diagonal's shift: key positions of
	-- row i are counted from i + shift
	function M.shift()
		if S.align == "top-left" then
			return "0.0f"
		elseif S.varlen ~= "none" then
			return "((float)lkv - (float)lq)"
		elseif S.seq_q > 0 then
			return hexf(S.seq_kv - S.seq_q)
		end
		return "((float)seq_kv - (float)seq_q)"
	end
	return M
end

-- One X-macro line for test and bench registries (tests/registry.h), behind
-- the target's guard: name, target, cpu, seq_q, seq_kv, whether the
-- 9-argument NAME, NAME_weights and NAME_merge exist, the stack bound, then
-- struct mha_attn's fields as designated
-- initializers (so a new field is a new initializer, not a new column).
local function registry_line(S, T, stack)
	local attn = {
		".h = " .. S.h, ".kv_heads = " .. S.kv_heads, ".dk = " .. S.dk,
		".dv = " .. S.dv, ".mask = " .. S.mask_bits .. "u",
		".align = " .. (S.align == "top-left" and 1 or 0),
		".layout = " .. ({bshd = 0, bhsd = 1, sbhd = 2})[S.layout],
		".window = " .. S.window, ".scale = " .. string.format("%a", S.scale),
	}
	if S.mask_dims > 0 then
		attn[#attn + 1] = ".mask_dims = " .. S.mask_dims
	end
	if S.window_left >= 0 or S.window_right >= 0 then
		attn[#attn + 1] = string.format(".window_sides = %d, .window_left = %d, .window_right = %d",
			(S.window_left >= 0 and 1 or 0) + (S.window_right >= 0 and 2 or 0),
			math.max(S.window_left, 0), math.max(S.window_right, 0))
	end
	if S.softcap > 0 then
		attn[#attn + 1] = ".softcap = " .. string.format("%a", S.softcap)
	end
	if S.alibi ~= "none" then
		attn[#attn + 1] = ".alibi = " .. (S.alibi == "slopes" and 1 or 2)
	end
	if S.max_bias > 0 then
		attn[#attn + 1] = ".max_bias = " .. string.format("%a", S.max_bias)
	end
	if S.sinks then
		attn[#attn + 1] = ".sinks = 1"
	end
	if S.packed ~= "none" then
		attn[#attn + 1] = ".packed = " .. (S.packed == "qkv" and 1 or 2)
	end
	if S.varlen ~= "none" then
		attn[#attn + 1] = ".varlen = " .. (S.varlen == "padded" and 1 or 2)
	end
	if S.kv_dtype ~= "f32" then
		attn[#attn + 1] = ".kv_dtype = " .. KV_DTYPES[S.kv_dtype]
	end
	if S.dtype ~= "f32" then
		attn[#attn + 1] = ".dtype = " .. KV_DTYPES[S.dtype]
	end
	local line = string.format("MHA_KERNEL(%s, \"%s\", \"%s\", %d, %d, %d, %d, %d, %d, %s)\n",
		S.name, S.target, table.concat(T.cpu, " "), S.seq_q, S.seq_kv,
		plain_form(S) and 1 or 0, S.weights and 1 or 0,
		S.lse and 1 or 0, stack,
		table.concat(attn, ", "))
	if T.guard == "" then
		return line
	end
	return "#if " .. T.guard .. "\n" .. line .. "#endif\n"
end

-- What every template of spec sees, whatever its target: the spec, its
-- inputs and prototypes, and include and lines to render other templates.
local function base_vars(spec)
	local vars = {S = spec, hexf = hexf, signature = signature,
	              args_struct = args_struct}
	vars.inputs = inputs(spec)
	-- a row's offset in q, k, v or out (row_offset)
	vars.offset = function(...)
		return row_offset(spec, ...)
	end
	-- the shape of the bias and boolean mask (--mask-dims), for comments
	vars.mask_shape = (spec.mask_b and "[batch]" or "") ..
	                  (spec.mask_h and ("[" .. spec.h .. "]") or "") .. "[seq_q][seq_kv]"
	-- the 9-argument NAME (and NAME_weights) exist when the spec reads
	-- nothing else
	vars.plain = plain_form(spec)
	-- how k and v are stored (--kv-dtype): the C type of their elements,
	-- and its name for comments
	vars.KT = spec.kv_dtype == "f32" and "float" or
	          spec.kv_dtype == "q8" and "struct mha_q8_0" or "uint16_t"
	vars.kv_desc = spec.kv_dtype == "f32" and "floats" or
	               spec.kv_dtype == "q8" and "q8_0 blocks of 32 elements" or
	               (spec.kv_dtype .. " elements (uint16_t bits)")
	-- how q and out are stored (--dtype): the C type of their elements
	vars.QT = spec.dtype == "f32" and "float" or "uint16_t"
	-- code outside every target's (NAME_merge): the scalar conversions
	-- of the --dtype, to and from float, as functions PREFIX_in and
	-- PREFIX_out (C text)
	vars.half_functions = function(prefix)
		local out = {}
		for _, h in ipairs(common_helpers()) do
			if h[1] == spec.dtype or h[1] == "to_" .. spec.dtype then
				local text = h[2]:gsub("P_to_" .. spec.dtype .. "%(", prefix .. "_out("):gsub("P_" .. spec.dtype .. "%(", prefix .. "_in(")
				out[#out + 1] = text
			end
		end
		return table.concat(out, "\n")
	end
	-- k or v pointer p advanced by e elements (a C expression): with q8
	-- by e / 32 blocks (every row and head starts a block); kv_step the
	-- same distance alone
	vars.kv_step = function(e)
		return spec.kv_dtype == "q8" and ("(" .. e .. ") / 32") or e
	end
	vars.kv_at = function(p, e)
		return p .. " + " .. vars.kv_step(e)
	end
	-- the bytes n elements of k or v take (n a number; C text): with q8,
	-- their blocks' (34 bytes per 32 elements)
	vars.kv_bytes = function(n)
		if spec.kv_dtype == "q8" then
			return tostring(n // 32 * 34)
		end
		return n .. " * sizeof(" .. vars.KT .. ")"
	end
	-- the loop prefetching n elements from p + e (indent: the body's
	-- line's), step elements at a time, with q8 a 64-byte line of the
	-- blocks at a time
	vars.prefetch = function(indent, p, e, n, step)
		local bound, at = n, vars.kv_at(p, e .. " + c")
		if spec.kv_dtype == "q8" then
			bound, step, at = vars.kv_bytes(n), 64, "(const char *)(" .. vars.kv_at(p, e) .. ") + c"
		end
		return "for (size_t c = 0; c < " .. bound .. "; c += " .. step .. ")\n" ..
		       indent .. "\t__builtin_prefetch(" .. at .. ", 0, 3);"
	end
	-- "const T name = a->name;" for every input the kernel reads; with
	-- --packed, k and v (qkv) or v (kv) point into the packed buffer, and
	-- with qkv seq_kv is seq_q
	local from = {}
	if spec.packed == "qkv" then
		from.k = "(const " .. vars.QT .. " *)a->q + " .. select(4, geometry(spec, "k"))
		from.v = "(const " .. vars.QT .. " *)a->q + " .. select(4, geometry(spec, "v"))
		from.seq_kv = "a->seq_q"
	elseif spec.packed == "kv" then
		from.v = vars.kv_at("(const " .. vars.KT .. " *)a->k", select(4, geometry(spec, "v")))
	end
	vars.unpack = function(indent)
		local out = {}
		for _, f in ipairs(vars.inputs) do
			local decl = f[2]:sub(-1) == "*" and (f[2] .. "const " .. f[1]) or
			             ("const " .. f[2] .. " " .. f[1])
			out[#out + 1] = indent .. decl .. " = " .. (from[f[1]] or ("a->" .. f[1])) .. ";"
		end
		return table.concat(out, "\n")
	end
	-- struct mha_args's initializers from the arguments of the same names:
	-- the inputs, then the names in extra
	vars.fill = function(extra)
		local out = {}
		for _, f in ipairs(vars.inputs) do
			out[#out + 1] = "." .. f[1] .. " = " .. f[1]
		end
		for _, f in ipairs(extra or {}) do
			out[#out + 1] = "." .. f .. " = " .. f
		end
		return table.concat(out, ", ")
	end
	-- a plan's algorithm and blocks, for a file's opening comment
	vars.algorithm = function(P)
		if P.algo == "tiled" then
			return "tiled, " .. P.bq .. " query rows" .. (P.bqx > P.bq and (" (up to " .. P.bqx .. " in a last block)") or "") ..
			       " x " .. P.bk ..
			       " keys" .. (P.bkx > P.bk and (" (up to " .. P.bkx .. " in a last block)") or "") ..
			       ", micro-tiles " .. P.mq .. "x" .. P.nk .. " (scores), " ..
			       (P.pvr > 0 and (P.pvr .. "x" .. P.pvcs[1] * P.W .. " (P.V, rows broadcast)")
			        or (P.mq .. "x" .. P.nv .. " (P.V)")) ..
			       (P.tr_rt and ("; a block's last " .. (P.tr > 1 and ("1-" .. P.tr .. " rows") or "row") .. " past whole vectors one at a time" ..
			                     (P.trv > 0 and P.trv < P.tr and (" (" .. (P.trv > 1 and ("1-" .. P.trv) or "1") .. " past a tile's first)") or ""))
			        or P.tr > 0 and ("; a block's last " .. P.tr .. " row" .. (P.tr > 1 and "s" or "") .. " one at a time") or "")
		end
		return "rows, blocks of " .. P.bk .. " keys"
	end
	vars.include = function(path)
		return (engine.render(path, vars))
	end
	-- the same without its last newline, for a line of its own
	vars.lines = function(path)
		return (engine.render(path, vars):gsub("\n$", ""))
	end
	return vars
end

-- What the kernel templates of spec see for target table T: the table,
-- the plan, and the helpers that spell rows, limits and score modifiers.
local function kernel_vars(spec, T)
	local used = {}
	rawset(T, "prefix", spec.name)
	-- ops that need a helper function call T.use; T.prelude() then emits
	-- the helpers used so far, in the target's order, named after the kernel
	rawset(T, "use", function(helper)
		used[helper] = true
	end)
	rawset(T, "prelude", function()
		local out = {}
		for _, h in ipairs(T.helpers) do
			if used[h[1]] then
				out[#out + 1] = (h[2]:gsub("P_", spec.name .. "_"))
			end
		end
		return table.concat(out, "\n")
	end)
	local vars = base_vars(spec)
	vars.T, vars.P, vars.vloop = T, plan(spec, T), vloop
	vars.stack = vars.P.stack
	vars.plane_at = function(base, b, hh)
		return plane_at(spec, vars.P, base, b, hh)
	end
	-- scores some mask may set to -inf (beyond the rows' limits)
	vars.holes = spec.bias or spec.bool or spec.keys
	vars.limit = function(i)
		return limit_expr(spec, vars.P, i)
	end
	vars.first_key = function(i, c)
		return lo_expr(spec, vars.P, i, c)
	end
	-- with --varlen, the C expressions of sequence b's queries and keys,
	-- each at most the buffers' (N_len, templates/work.c.in): from q_len
	-- (NULL: seq_q) and kv_len, or from the differences of cu_seqlens_q and
	-- cu_seqlens_k; and the offset of row i of head hh in lse ([batch][h][seq_q],
	-- packed [h][total_q])
	local len = spec.name .. "_len"
	vars.len_q = function(b)
		if spec.varlen == "packed" then
			return len .. "(cu_seqlens_q[" .. b .. " + 1] - cu_seqlens_q[" .. b .. "], " .. vars.P.sq .. ")"
		end
		return "q_len ? " .. len .. "(q_len[" .. b .. "], " .. vars.P.sq .. ") : " .. vars.P.sq
	end
	vars.len_kv = function(b)
		if spec.varlen == "packed" then
			return len .. "(cu_seqlens_k[" .. b .. " + 1] - cu_seqlens_k[" .. b .. "], " .. vars.P.skv .. ")"
		end
		return len .. "(kv_len[" .. b .. "], " .. vars.P.skv .. ")"
	end
	vars.lse_at = function(b, hh, i)
		if spec.varlen == "packed" then
			return hh .. " * (size_t)cu_seqlens_q[batch] + cu_seqlens_q[" .. b .. "] + " .. i
		end
		return "(" .. b .. " * " .. spec.h .. " + " .. hh .. ") * " .. vars.P.sq .. " + " .. i
	end
	-- the distance between two heads' rows in lse
	vars.lse_heads = spec.varlen == "packed" and "(size_t)cu_seqlens_q[batch]" or vars.P.sq
	vars.mods = modifiers(spec, T, spec.name)
	-- the tiled softmax works in base 2, as FlashAttention's does: q is
	-- packed scaled by log2(e) too, so the scores carry the factor and
	-- their exps are 2^x, whose range reduction takes adds instead of three
	-- FMAs (h8 dk64 s128, AVX2: 1.010-1.015x).  Not with score modifiers (they
	-- act on natural scores).  exp_e: the kernel also calls the natural
	-- exp (the rows algorithm, modifiers, sinks, --weights).
	vars.P.log2 = vars.P.algo == "tiled" and not vars.mods.any
	vars.P.exp_e = not vars.P.log2 or spec.sinks or spec.weights
	-- q8: p ("row + off", off in elements) as its block, a C lvalue, and
	-- the lane of the vector's first element in it (a whole vector lies
	-- within one block)
	local function q8_at(p)
		local row, off = p:match("^(.-) %+ (.+)$")
		row, off = row or p, tonumber(off) or off or 0
		if type(off) == "number" then
			return row .. "[" .. off // 32 .. "]", tostring(off % 32)
		end
		return row .. "[(" .. off .. ") / 32]", "(" .. off .. ") % 32"
	end
	-- the target's op for elements stored as dtype (f32, f16, bf16):
	-- kind "load", "load_part", "store" or "store_part", the f32 loads
	-- and stores at any alignment
	local function typed(kind, dtype)
		if dtype == "f32" then
			return T[kind == "load" and "loadu" or kind == "store" and "storeu" or kind]
		end
		return T[kind .. "_" .. dtype]
	end
	-- a vector of W elements of q from p (any alignment) as floats, and
	-- the first n of them
	vars.q_load = typed("load", spec.dtype)
	vars.q_load_part = typed("load_part", spec.dtype)
	-- element x (a C lvalue) of q or out as a float, in scalar code
	vars.q_at = function(x)
		if spec.dtype == "f32" then
			return x
		end
		T.use(spec.dtype)
		return T.prefix .. "_" .. spec.dtype .. "(" .. x .. ")"
	end
	-- the statement storing vector x of floats at p of out (any
	-- alignment), rounded to its --dtype; out_store_part the first n
	vars.out_store = typed("store", spec.dtype)
	vars.out_store_part = typed("store_part", spec.dtype)
	-- the statement "o = x;" for element o (a C lvalue) of out, in scalar
	-- code
	vars.out_set = function(o, x)
		if spec.dtype == "f32" then
			return o .. " = " .. x .. ";"
		end
		T.use("to_" .. spec.dtype)
		return o .. " = " .. T.prefix .. "_to_" .. spec.dtype .. "(" .. x .. ");"
	end
	-- a vector of W keys' or values' elements from p (a pointer to their
	-- storage type, any alignment), as floats: loadu, or the target's
	-- conversion from f16, bf16 or q8 (--kv-dtype); kv_load_part the first n
	vars.kv_load = function(p)
		if spec.kv_dtype == "q8" then
			return T.load_q8(q8_at(p))
		end
		return typed("load", spec.kv_dtype)(p)
	end
	-- the value vector at p as the P.V pass multiplies it by a weight:
	-- kv_load, with q8 the int8 values alone; kv_weight(w, p) the weight w
	-- for it, with q8 times the block's scale (the same expression for
	-- each vector of a block, which the compiler computes once: one
	-- multiply a block instead of one a vector)
	vars.kv_vec = function(p)
		if spec.kv_dtype ~= "q8" then
			return vars.kv_load(p)
		end
		return T.q8_ints(q8_at(p))
	end
	vars.kv_weight = function(w, p)
		if spec.kv_dtype ~= "q8" then
			return w
		end
		return T.mul(w, T.q8_scale((q8_at(p))))
	end
	-- acc + s * (the vector at p), s a broadcast weight
	vars.kv_fma = function(s, p, acc)
		return T.fma(vars.kv_weight(s, p), vars.kv_vec(p), acc)
	end
	-- q8 keys, R rows at a time: the statements summing q . k of row r
	-- into vector t<r> (one row: into t0 and t1, blocks in turn, so that
	-- consecutive blocks' FMAs do not wait on each other; the dot product
	-- is the hsum of their sum), qv(c) q's vector c, blk(r, b) row r's
	-- block b (a C lvalue): per block and row the int8 values' dot product
	-- in one FMA chain, then one FMA by the block's scale; each of a
	-- block's query vectors taken once for the R rows (into q0, q1, ...)
	vars.q8_dots = function(indent, qv, blk, R)
		local W = T.width
		local per, out, t = 32 // W, {}, {}
		local function acc(r, b) return "t" .. (R == 1 and b % 2 or r) end
		for r = 0, math.max(R, 2) - 1 do
			t[#t + 1] = "t" .. r .. " = " .. T.zero()
		end
		out[#out + 1] = T.vec .. " " .. table.concat(t, ", ") .. ";"
		for b = 0, spec.dk // 32 - 1 do
			out[#out + 1] = "{"
			for c = 0, per - 1 do
				out[#out + 1] = "\tconst " .. T.vec .. " q" .. c .. " = " .. qv(b * per + c) .. ";"
			end
			for r = 0, R - 1 do
				local x = blk(r, b)
				out[#out + 1] = "\t{"
				out[#out + 1] = "\t\t" .. T.vec .. " u = " .. T.mul("q0", T.q8_ints(x, "0")) .. ";"
				for c = 1, per - 1 do
					out[#out + 1] = "\t\tu = " .. T.fma("q" .. c, T.q8_ints(x, tostring(c * W)), "u") .. ";"
				end
				out[#out + 1] = "\t\t" .. acc(r, b) .. " = " .. T.fma("u", T.q8_scale(x), acc(r, b)) .. ";"
				out[#out + 1] = "\t}"
			end
			out[#out + 1] = "}"
		end
		return table.concat(out, "\n" .. indent)
	end
	-- one row's: into t0 and t1, row the key row
	vars.q8_dot = function(indent, qv, row)
		return vars.q8_dots(indent, qv, function(_, b) return row .. "[" .. b .. "]" end, 1)
	end
	vars.kv_load_part = function(p, n)
		assert(spec.kv_dtype ~= "q8", "q8 rows are whole vectors")
		return typed("load_part", spec.kv_dtype)(p, n)
	end
	return vars
end

-- The target tables of a --target list ("avx512,avx2,scalar"), in its
-- order, and the table whose architecture they share (nil when all run
-- anywhere): each known, named once, of one architecture.
local function target_list(spec)
	local all, list, seen, arch = spec.target, {}, {}, nil
	for name in (all .. ","):gmatch("([^,]*),") do
		if name == "" or name == "native" then
			error(string.format("--target %s: a list names targets (%s is not one)",
			                    all, name == "" and "an empty name" or name), 0)
		elseif seen[name] then
			error(string.format("--target %s: names %s twice", all, name), 0)
		end
		seen[name] = true
		local T = load_target(name)
		if T.arch ~= "" and arch and T.arch ~= arch.arch then
			error(string.format("--target %s: %s is for %s, %s for %s; a list takes one architecture's targets",
			                    all, arch.name, arch.arch, name, T.arch), 0)
		elseif T.arch ~= "" then
			arch = arch or T
		end
		list[#list + 1] = T
	end
	return list, arch
end

-- The file of a --target list: each target's kernel code compiled for its
-- instructions by target attributes, under names N__target, and the
-- exported functions calling the variant the CPU runs.
local function dispatch(spec, what)
	local list, arch = target_list(spec)
	if spec.threads == "openmp" then
		error(string.format("--threads openmp: not with the list --target %s (clang does not give OpenMP's parallel regions the variants' target attributes)",
		                    spec.target), 0)
	end
	local vars = base_vars(spec)
	vars.guard = arch and arch.guard or ""
	vars.arch = arch and arch.arch or ""
	vars.variants = {}
	local includes, seen = {}, {}
	for _, T in ipairs(list) do
		local vs = {}
		for k, v in pairs(spec) do
			vs[k] = v
		end
		vs.target, vs.name = T.name, spec.name .. "__" .. T.name
		local V = kernel_vars(vs, T)
		vars.variants[#vars.variants + 1] = {
			T = T, N = vs.name, P = V.P,
			text = engine.render("templates/variant.c.in", V),
		}
		for _, h in ipairs(T.includes) do
			if not seen[h] then
				seen[h] = true
				includes[#includes + 1] = h
			end
		end
	end
	vars.includes = includes
	-- the stack of the deepest variant
	vars.stack = 0
	for _, v in ipairs(vars.variants) do
		vars.stack = math.max(vars.stack, v.P.stack)
	end
	if what == "kernel" then
		return engine.render("templates/dispatch.c.in", vars)
	elseif what == "header" then
		return engine.render("templates/header.h.in", vars)
	elseif what == "cflags" then
		return "\n" -- target attributes, not flags
	elseif what == "registry" then
		-- the file runs where its last variant runs
		return registry_line(spec, {cpu = list[#list].cpu, guard = vars.guard}, vars.stack)
	elseif what == "exp" then
		error(string.format("--emit exp: takes one target, not the list %s",
		                    spec.target), 0)
	end
	error("unknown output '" .. tostring(what) .. "'", 0)
end


-- struct mha_layer_params and struct mha_layer_args as the contract
-- (runtime/mha_abi.h) defines them between their marks: a layer file
-- carries a copy, guarded, like struct mha_args.
local function layer_structs()
	local text = mhagen.source("runtime/mha_abi.h")
	local body = text:match("/%* mha_layer: begin %*/\n(.-)/%* mha_layer: end %*/")
	if not body then
		error("runtime/mha_abi.h: no layer structs between their marks", 0)
	end
	return body
end

-- The decoder step's store of a float into the cache's --kv-dtype
-- (rounded to nearest even; f16 overflow to inf, NaN kept quiet), as
-- runtime/mha_kvstore.h converts between its marks: one static function,
-- NAME_store.
local kv_store
function kv_store(name, dtype)
	local body = store_body(dtype)
	if dtype == "q8" then
		-- the block's store, and the f16 store of its scale it calls
		local q8 = body:gsub("static inline void mha_q8_from_floats%(", "static void " .. name .. "_store(")
		q8 = q8:gsub("mha_f16_from_float%(", name .. "_f16(")
		local f16 = kv_store(name, "f16"):gsub(name .. "_store%(", name .. "_f16(")
		return f16 .. "\n" .. q8
	end
	local fn = body:gsub("^static inline uint16_t mha_" .. dtype .. "_from_float%(", "static uint16_t " .. name .. "_store(")
	return fn
end

-- The L2 bytes a projection keeps a block of packed weight panels in, so
-- that each block is read from memory once for all the rows.
local GEMM_L2 = 512 * 1024

-- Everything decided about a layer (--embed) before it is written: the
-- attention's spec (the layer's own, less the layer: q, k, v as the
-- projections write them), and the projections, each a GEMM C = A W^T + b
-- of K inputs and N outputs over the weights packed in panels of NR
-- columns, [ceil(N / NR)][K][NR] then the bias padded to the panels.
local function layer_plan(spec, T)
	local D = T.defaults
	-- gemv_u: k per step of the one-row GEMM (accumulators per vector)
	-- unroll: times the compiler unrolls the micro-kernel's loop over K
	-- (#pragma GCC unroll; 1: as it decides)
	local L = {W = T.width, mr = D.gemm_mr, nv = D.gemm_nv, gemv_u = 4,
	           unroll = D.unroll_gemm or 1}
	L.nr = L.nv * L.W
	local E = spec.embed
	local A = {}
	for k, v in pairs(spec) do
		A[k] = v
	end
	A.name = spec.name .. "_attn"
	A.embed = 0
	-- self-attention: one GEMM writes the q, k and v heads of a position
	-- side by side, the attention's --packed qkv rows
	A.packed = spec.cross and "none" or "qkv"
	-- add_bias_kv, add_zero_attn: keys after the inputs' that every row
	-- sees, folded into each row's result by its log-sum-exp
	L.extra = (spec.add_bias_kv and 1 or 0) + (spec.add_zero_attn and 1 or 0)
	if L.extra > 0 then
		A.lse = true
	end
	if spec.kv_cache > 0 then
		-- the decoder step: the new tokens' q (copied out of the fused
		-- rows) over the caller's cache, [batch][kv_cache] rows of the
		-- kv heads in their storage type, each item's keys its cached
		-- positions and the new tokens (FlashAttention's kvcache)
		A.packed, A.varlen, A.seq_kv, A.kv_cache = "none", "padded", spec.kv_cache, 0
	end
	L.attn = A
	-- the projections: tag, inputs K, outputs N, the C expressions of
	-- their weights and bias in struct mha_layer_params p
	local proj = {}
	local function add(tag, K, N, w, b)
		proj[#proj + 1] = {tag = tag, K = K, N = N, w = w, b = b}
	end
	-- k and v are kv_heads heads wide (grouped-query projections: KE <
	-- E), in_proj_weight [E + 2 KE][E] and in_proj_bias [E + 2 KE]
	local KE = spec.kv_heads * (E // spec.h)
	L.ke = KE
	local same = spec.kdim == E and spec.vdim == E
	if not spec.cross then
		add("qkv", E, E + 2 * KE, "p->in_proj_weight", "p->in_proj_bias")
	elseif same then
		add("q", E, E, "p->in_proj_weight", "p->in_proj_bias")
		add("k", E, KE, "p->in_proj_weight + " .. E * E, "p->in_proj_bias + " .. E)
		add("v", E, KE, "p->in_proj_weight + " .. (E + KE) * E, "p->in_proj_bias + " .. E + KE)
	else
		add("q", E, E, "p->q_proj_weight", "p->in_proj_bias")
		add("k", spec.kdim, KE, "p->k_proj_weight", "p->in_proj_bias + " .. E)
		add("v", spec.vdim, KE, "p->v_proj_weight", "p->in_proj_bias + " .. E + KE)
	end
	add("out", E, E, "p->out_proj_weight", "p->out_proj_bias")
	-- where each projection's panels and bias lie in the packed floats
	-- (every part 16 floats, 64 bytes, aligned), and the GEMM functions
	-- (one per K and N)
	L.proj, L.gemms, L.ukrs = {}, {}, {}
	local at, seen, seen_k = 0, {}, {}
	for _, p in ipairs(proj) do
		p.np = (p.N + L.nr - 1) // L.nr
		p.at = at
		at = at + (p.np * p.K * L.nr + 15) // 16 * 16
		if spec.proj_bias then
			p.bias_at = at
			at = at + (p.np * L.nr + 15) // 16 * 16
		end
		p.fn = spec.name .. "_gemm_" .. p.K .. "x" .. p.N
		if not seen[p.fn] then
			seen[p.fn] = true
			-- panels per block: a block of K x NR panels within GEMM_L2
			local ncp = math.max(1, GEMM_L2 // (p.K * L.nr * 4))
			L.gemms[#L.gemms + 1] = {fn = p.fn, K = p.K, N = p.N, np = p.np,
			                         ncp = math.min(ncp, p.np),
			                         last = p.N - (p.np - 1) * L.nr}
		end
		if not seen_k[p.K] then
			seen_k[p.K] = true
			L.ukrs[#L.ukrs + 1] = p.K
		end
		L.proj[p.tag] = p
		L.proj[#L.proj + 1] = p
	end
	if spec.add_bias_kv then
		-- bias_k then bias_v, KE floats each
		L.bkv_at = at
		at = at + (2 * KE + 15) // 16 * 16
	end
	L.packed = at
	return L
end

-- The file of a layer (--embed): the attention kernel's code for the
-- attention's spec, the projections' GEMMs, pack, workspace and forward.
local function layer(spec, what)
	if spec.target:find(",", 1, true) then
		error(string.format("--target %s: a layer takes one target", spec.target), 0)
	end
	local T = load_target(spec.target)
	local L = layer_plan(spec, T)
	local V = kernel_vars(L.attn, T)
	if what == "cflags" then
		return T.cflags .. "\n"
	elseif what ~= "kernel" and what ~= "header" and what ~= "registry" then
		error(string.format("--emit %s: not for a layer (--embed)", what), 0)
	end
	local vars = base_vars(spec)
	vars.T, vars.L, vars.A, vars.AP = T, L, L.attn, V.P
	vars.layer_structs, vars.args_struct = layer_structs, args_struct
	vars.kv_store = function()
		return kv_store(spec.name, spec.kv_dtype)
	end
	if what == "header" then
		return engine.render("templates/layer.h.in", vars)
	elseif what == "registry" then
		local A = L.attn
		local line = string.format("MHA_LAYER(%s, \"%s\", \"%s\", %d, %d, .embed = %d, .kdim = %d, .vdim = %d, .cross = %d, .proj_bias = %d, .weights = %d, .kv_cache = %d, .add_bias_kv = %d, .add_zero_attn = %d, " ..
			".attn = {.h = %d, .kv_heads = %d, .dk = %d, .dv = %d, .mask = %du, .align = %d, .layout = %d, .scale = %s, .mask_dims = %d, .kv_dtype = %d})\n",
			spec.name, spec.target, table.concat(T.cpu, " "), spec.seq_q, spec.kv_cache > 0 and 0 or spec.seq_kv,
			spec.embed, spec.kdim, spec.vdim, spec.cross and 1 or 0, spec.proj_bias and 1 or 0, spec.weights and 1 or 0, spec.kv_cache, spec.add_bias_kv and 1 or 0, spec.add_zero_attn and 1 or 0,
			A.h, A.kv_heads, A.dk, A.dv, A.mask_bits, A.align == "top-left" and 1 or 0,
			({bshd = 0, bhsd = 1, sbhd = 2})[A.layout], string.format("%a", A.scale), A.mask_dims,
			KV_DTYPES[A.kv_dtype])
		if T.guard == "" then
			return line
		end
		return "#if " .. T.guard .. "\n" .. line .. "#endif\n"
	end
	-- the GEMMs first, so that the helpers their ops use join the
	-- attention's prelude (T.prefix is the attention's name)
	vars.gemm = engine.render("templates/gemm.c.in", vars)
	vars.attention = engine.render("templates/variant.c.in", V)
	return engine.render("templates/layer.c.in", vars)
end

local function generate(spec, what)
	if spec.embed > 0 then
		return layer(spec, what)
	end
	if spec.target:find(",", 1, true) then
		return dispatch(spec, what)
	end
	local T = load_target(spec.target)
	local vars = kernel_vars(spec, T)
	if what == "kernel" then
		return engine.render("templates/kernel.c.in", vars)
	elseif what == "header" then
		return engine.render("templates/header.h.in", vars)
	elseif what == "exp" then
		-- both bases, each one vector at a time and grouped
		vars.P.log2, vars.P.exp_e, vars.P.exp_emit = true, true, true
		return engine.render("templates/exp.c.in", vars)
	elseif what == "cflags" then
		return T.cflags .. "\n"
	elseif what == "registry" then
		return registry_line(spec, T, vars.stack)
	end
	error("unknown output '" .. tostring(what) .. "'", 0)
end

-- generate(spec, what) -> C text; plan(spec) -> the knobs in effect;
-- describe(name) -> a target's facts.
return {generate = generate, plan = knobs_in_effect, describe = describe}
