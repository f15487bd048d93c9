-- Entry point: returns the functions the generator calls (at the end):
-- generate(spec, what), what being "kernel", "header", "exp" or "registry",
-- plan(spec) and describe(target).  Decides everything about the shape
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
		known[op[1]] = true
	end
	for k in pairs(T) do
		if not known[k] then
			error(string.format("%s: '%s' is neither a field nor an op of templates/ops.lua",
			                    path, tostring(k)), 0)
		end
	end
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
	return setmetatable(T, {__index = function(_, op)
		error(string.format("target '%s' has no op '%s'", name, tostring(op)), 2)
	end})
end

-- What C code reads of target name (generator/gen.c, struct
-- mhagen_target): the facts that decide where its kernels build and run.
local function describe(name)
	local T = load_target(name)
	local D = T.defaults
	local defaults = string.format("block-q %d, block-kv %d%s, mq %d, nk %d, nv %d",
		D.block_q, D.block_kv,
		D.block_kv_causal and string.format(" (%d causal)", D.block_kv_causal) or "",
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

-- Everything decided about a kernel before it is written.
local function plan(S, T)
	local D = T.defaults
	local P = {W = T.width}
	P.bk = S.block_kv > 0 and S.block_kv or
	       (S.causal and D.block_kv_causal) or D.block_kv
	P.bq = S.block_q > 0 and S.block_q or D.block_q
	P.mq = S.mq > 0 and S.mq or D.mq
	P.nk = S.nk > 0 and S.nk or D.nk
	P.nv = S.nv > 0 and S.nv or D.nv
	P.k = dims(S.dk, T, S.unroll_max)
	P.v = dims(S.dv, T, S.unroll_max)
	P.group = S.h // S.kv_heads
	P.sq = S.seq_q > 0 and tostring(S.seq_q) or "seq_q"
	P.skv = S.seq_kv > 0 and tostring(S.seq_kv) or "seq_kv"
	P.omp = S.threads == "openmp"
	-- element strides between consecutive rows of one head
	if S.layout == "bhsd" then
		P.qstride, P.ostride = S.dk, S.dv
		P.kstride, P.vstride = S.dk, S.dv
	else
		P.qstride, P.ostride = S.h * S.dk, S.h * S.dv
		P.kstride, P.vstride = S.kv_heads * S.dk, S.kv_heads * S.dv
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
	if P.algo == "rows" then
		-- each row's keys in P.split ranges whose softmax states are
		-- merged after, so that few rows still keep every thread busy; a
		-- work item takes P.gs query heads that share a key/value head, so
		-- a key block is read from memory once for them.  Their states live
		-- on the stack: at most 32 KiB of accumulators per item, 128 KiB
		-- of partial states in all.
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
	end
	if P.algo == "tiled" then
		if S.seq_q > 0 and (P.bq > S.seq_q or
		                    (S.block_q == 0 and S.seq_q <= P.bq * 3 // 2)) then
			-- one block, rather than a full one and a thin remainder
			-- (measured: h12 dk64 s197 1.05-1.08x faster on avx2 and avx512)
			P.bq = S.seq_q
		end
		if P.mq % P.W ~= 0 then
			error(string.format("--mq %d is not a multiple of the %s vector width %d",
			                    P.mq, T.name, P.W), 0)
		end
		-- the transposed query and output blocks live on the stack: keep
		-- them within 256 KiB each, shrinking the default query block for
		-- large head dims
		local d = math.max(S.dk, S.dv)
		if S.mq == 0 then
			-- a default micro-tile wider than the block allows narrows
			while P.mq > P.W and d * P.mq > 65536 do
				P.mq = P.mq - P.W
			end
		end
		if S.block_q == 0 then
			while P.bq > P.mq and d * P.bq > 65536 do
				P.bq = math.max(P.bq // 2, P.mq)
			end
		end
		-- query rows of a block, padded to whole micro-tiles
		P.bqp = (P.bq + P.mq - 1) // P.mq * P.mq
		-- the query and output blocks are stored transposed, a column of
		-- bqs floats per head dim; an odd number of cache lines per column
		-- spreads a micro-tile's columns over every cache set, where an even
		-- one piles them on a few (256 or 384 rows unpadded measured 0.91x
		-- and 0.96x of 192 on AVX-512)
		P.bqs = (P.bqp + 15) // 16
		P.bqs = (P.bqs % 2 == 0 and P.bqs + 1 or P.bqs) * 16
		if d * P.bqp > 65536 then
			error(string.format("--block-q %d: head dim %d x %d floats exceed the 256 KiB query block; lower --block-q",
			                    P.bq, d, P.bqp), 0)
		end
		-- every stack buffer of a work item (tiled.c.in): query and output
		-- blocks, scores, a dense copy of a value block when the layout
		-- strides values, row state; at most 4 MiB, half the usual thread
		-- stack, shrinking the default key block for large dv
		local function stack_floats(bk)
			local vp = P.vstride ~= S.dv and bk * S.dv or 0
			return (S.dk + S.dv) * P.bqs + 4 * P.bqp + bk * P.mq + vp + 2 * P.mq
		end
		if S.block_kv == 0 then
			while P.bk > P.W and P.bk > 8 and stack_floats(P.bk) > 1048576 do
				P.bk = P.bk // 2
			end
		end
		if stack_floats(P.bk) > 1048576 then
			error(string.format("--block-kv %d: blocks of %d keys x dv %d take %d KiB of stack (at most 4096 KiB); lower --block-kv",
			                    P.bk, P.bk, S.dv, stack_floats(P.bk) * 4 // 1024), 0)
		end
	end
	return P
end

-- The knobs in effect for spec, for the C side (generator/gen.c,
-- mhagen_plan): each under its field name (generator/knobs.c), with what
-- unroll_max decides as unroll_k and unroll_v.  kv_split is the rows
-- algorithm's only.
local function knobs_in_effect(spec)
	local P = plan(spec, load_target(spec.target))
	return {algo = P.algo, block_q = P.bq, block_kv = P.bk, mq = P.mq,
	        nk = P.nk, nv = P.nv, unroll_k = P.k.unrolled,
	        unroll_v = P.v.unrolled, kv_split = P.split}
end

-- The C expression for how many keys query row i (a C expression) may see,
-- before padding: decided here from what the spec fixes.
local function limit_expr(S, P, i)
	if not S.causal then
		return P.skv
	elseif S.align == "top-left" then
		if S.seq_q > 0 and S.seq_q <= S.seq_kv then
			return "(" .. i .. " + 1)"
		end
		return "(" .. i .. " + 1 < " .. P.skv .. " ? " .. i .. " + 1 : " .. P.skv .. ")"
	elseif S.seq_q > 0 then
		local shift = S.seq_kv - S.seq_q
		if shift >= 0 then
			return "(" .. i .. " + " .. shift + 1 .. ")"
		end
		return "(" .. i .. " + 1 > " .. -shift .. " ? " .. i .. " + 1 - " .. -shift .. " : 0)"
	end
	return "(" .. i .. " + 1 + seq_kv > seq_q ? " .. i .. " + 1 + seq_kv - seq_q : 0)"
end

-- Offset of row (b, s, head) of a tensor with heads heads of d floats.
local function row_offset(S, b, s, head, d, heads, seq)
	if S.layout == "bhsd" then
		return "((" .. b .. " * " .. heads .. " + " .. head .. ") * " .. seq .. " + " .. s .. ") * " .. d
	end
	return "((" .. b .. " * " .. seq .. " + " .. s .. ") * " .. heads .. " + " .. head .. ") * " .. d
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

-- One X-macro line for test and bench registries (tests/registry.h), behind
-- the target's guard.
local function registry_line(S, T)
	local line = string.format("MHA_KERNEL(%s, \"%s\", \"%s\", %d, %d, %d, %d, %d, %d, %du, %d, %d, %s, %d, %d)\n",
		S.name, S.target, table.concat(T.cpu, " "), S.h, S.kv_heads, S.dk,
		S.dv, S.seq_q, S.seq_kv, S.mask_bits,
		S.align == "top-left" and 1 or 0, S.layout == "bhsd" and 1 or 0,
		string.format("%a", S.scale), S.window, S.weights and 1 or 0)
	if T.guard == "" then
		return line
	end
	return "#if " .. T.guard .. "\n" .. line .. "#endif\n"
end

local function generate(spec, what)
	local T = load_target(spec.target)
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
	local vars = {
		S = spec, T = T, P = plan(spec, T), hexf = hexf, vloop = vloop,
	}
	vars.limit = function(i)
		return limit_expr(spec, vars.P, i)
	end
	vars.offset = function(...)
		return row_offset(spec, ...)
	end
	vars.signature = signature
	vars.include = function(path)
		return (engine.render(path, vars))
	end
	if what == "kernel" then
		vars.template = "templates/kernel.c.in"
	elseif what == "header" then
		vars.template = "templates/header.h.in"
	elseif what == "exp" then
		vars.template = "templates/exp.c.in"
	elseif what == "registry" then
		return registry_line(spec, T)
	else
		error("unknown output '" .. tostring(what) .. "'", 0)
	end
	return engine.render(vars.template, vars)
end

-- generate(spec, what) -> C text; plan(spec) -> the knobs in effect;
-- describe(name) -> a target's facts.
return {generate = generate, plan = knobs_in_effect, describe = describe}
