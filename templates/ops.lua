-- What a target table (templates/targets/NAME.lua) holds: its fields and the
-- operations the kernel templates ask of it, each with its meaning and
-- whether every target must have it.  main.lua checks each table it loads
-- against this list, so a new target learns here what it must spell.
--
-- Operations return C text; a, b, c, v, x, lim are C expressions of the
-- target's vector type, p a C pointer expression to floats (to uint16_t for
-- the f16 and bf16 loads and stores of --dtype and --kv-dtype), n a lane count
-- (a Lua integer below the width), k a shift count and s a stride (Lua
-- integers).  An op's `with` lists the ops a table that has it must have too.
return {
	fields = {
		{"name", "string", "the target's name, the file's name"},
		{"width", "number", "floats per vector"},
		{"vec", "string", "the C vector type"},
		{"registers", "number", "vector registers the compiler may allocate; micro-tiles are sized to fit them"},
		{"includes", "table", "headers the kernels include, as \"<x.h>\""},
		{"defaults", "table", "knob defaults: block_kv, block_q, mq, nk, nv, kv_split (block_kv_causal optional; block_kv_narrow and block_kv_narrow_dims optional, both or neither: heads of dk + dv at most the latter take the former's keys a block, without causal or --block-kv; block_kv_long_dims and block_kv_long_keys optional, both or neither, with block_kv_narrow: heads of dk + dv at most the former take block_kv_narrow keys too where the keys number at least the latter or are known only at run time; pv_rows, the P.V micro-tile's rows broadcast against its columns in vector lanes, templates/main.lua P.pvr, where set, up to dv pv_dv, its rows' earlier sums times alpha loaded before its loop where pv_alpha_first is set (after it, its sums from 0, where unset); unroll_qk and unroll_pv, the times the compiler unrolls the loops of the score micro-kernels and of the rows-in-lanes P.V (not the pv_rows one), 1 where unset; diag_segments false: on the causal diagonal every vector of a tile's rows takes the tile's keys, true where unset; exp_group, the softmax's exps taken that many vectors at a time, and exp_rest, a remainder's that many (below exp_group; 1, none, where unset)); the layer's projection micro-tile, gemm_mr rows x gemm_nv vectors, its loop over K unrolled unroll_gemm times (1 where unset)"},
		{"arch", "string", "the architecture (uname -m) it builds for, \"\" for any"},
		{"guard", "string", "the C condition of that architecture, \"\" for any"},
		{"cpu", "table", "the CPU features it needs, names runtime/mha_cpu.c tests"},
		{"cflags", "string", "the compiler flags its kernels need (gcc and clang)"},
		{"requires", "string", "the C condition those flags make true (\"\" for none): a file compiled without it stops at an #error"},
		{"attribute", "string", "the target attribute giving one function those instructions (gcc and clang), \"\" for none"},
		{"detect", "string", "a C expression, true when the running CPU has the features (\"1\" for every CPU of its architecture): --target lists choose by it"},
		{"rank", "number", "--target native picks the supported target of highest rank"},
		{"helpers", "table", "helper functions ops emit through T.use, {name, C text with P_ for the kernel's prefix}"},
	},
	ops = {
		{"zero", true, "zero()", "a vector of zeros"},
		{"set1", true, "set1(x)", "x (a float expression) in every lane"},
		{"load", true, "load(p)", "the vector at p, aligned to the vector"},
		{"loadu", true, "loadu(p)", "the vector at p, any alignment"},
		{"load_part", true, "load_part(p, n)", "the first n lanes from p, the rest zero; reads nothing past p[n-1]"},
		{"store", true, "store(p, v)", "a statement: v to p, aligned"},
		{"storeu", true, "storeu(p, v)", "a statement: v to p, any alignment"},
		{"store_part", true, "store_part(p, v, n)", "a statement: the first n lanes of v to p; writes nothing past p[n-1]"},
		{"add", true, "add(a, b)", "a + b"},
		{"sub", true, "sub(a, b)", "a - b"},
		{"mul", true, "mul(a, b)", "a * b"},
		{"fma", true, "fma(a, b, c)", "a * b + c (fused where the target can)"},
		{"max", true, "max(a, b)", "the larger of a and b per lane"},
		{"div", true, "div(a, b)", "a / b (correctly rounded)"},
		{"select_ge", true, "select_ge(x, lim, a, b)", "a where x >= lim, else b, per lane"},
		{"hsum", true, "hsum(v)", "the sum of v's lanes, a float"},
		{"hmax", true, "hmax(v)", "the largest of v's lanes, a float"},
		{"sums4", false, "sums4(p, a, b, c, d, f)", "a statement: p[0], ..., p[3] = f times the sum of the lanes of a, b, c, d (p a float pointer, any alignment); without it templates take four hsums"},
		{"hsums", true, "hsums(names)", "the vector whose lane i is the sum of the lanes of names[i+1] (width C expressions of vectors)"},
		{"first", true, "first(v)", "lane 0 of v, a float"},
		{"as_int", true, "as_int(v)", "v's bits as 32-bit integer lanes"},
		{"as_float", true, "as_float(v)", "integer lanes' bits as floats"},
		{"shl", true, "shl(a, k)", "integer lanes of a shifted left by k"},
		{"mul_ge", true, "mul_ge(a, b, x, lim)", "a * b where x >= lim, else 0"},
		{"clamp_lo", false, "clamp_lo(x, lim)", "x where x >= lim, else lim, per lane (lim where x is NaN); without it the softmax's 2^x masks its result (mul_ge) instead of raising x to -127 first"},
		{"frac", false, "frac(x)", "x minus x rounded to the nearest integer (ties to even), exactly, one op (with frac_if and scale2_ge): the softmax's 2^x reduces its argument by it where frac_if() holds", with = {"frac_if", "scale2_ge"}},
		{"frac_if", false, "frac_if()", "with frac: the C preprocessor condition under which frac and scale2_ge compile"},
		{"scale2_ge", false, "scale2_ge(a, n, x, lim)", "with frac: a * 2^n (n integral floats) where x >= lim, else 0"},
		{"zero32", false, "zero32(p)", "a C expression of type uint32_t: bit i set where byte i of the 32 at p (const uint8_t *, any alignment) is zero; without it templates test the bytes one at a time"},
		{"hide_bit", false, "hide_bit(p, b, k)", "a statement: lane i of the vector at p (aligned floats) becomes -inf where bit k (C text, below 32) of b[i] (const uint32_t *, any alignment) is set; without it templates select lane by lane"},
		{"transpose", false, "transpose(names)", "a statement (lines after the first indented by a tab more, ending at the indentation of the first): transposes in place the width vectors held in the C variables names[1..width] (lane j of names[i] to lane i of names[j]); without it templates move lanes one at a time"},
		{"transpose_load", false, "transpose_load(names, row)", "statements (one a line) declaring the width vectors names[1..width] as the width floats from each of width rows in memory, transposed (lane j of names[i] is element i-1 of row j-1; row(j) is C text of row j's first float, any alignment); without it templates load the rows and transpose them"},
		{"transpose_store", false, "transpose_store(names, row)", "statements (one a line) storing the width vectors names[1..width] transposed as width rows of width floats (element i-1 of row j-1 is lane j-1 of names[i]; row(j) is C text of row j's first float, any alignment); without it templates transpose the vectors and store the rows"},
		{"load_f16", true, "load_f16(p)", "the vector of the W f16 values at p (a uint16_t pointer, any alignment) as floats, exactly"},
		{"load_part_f16", true, "load_part_f16(p, n)", "the first n f16 values from p as floats, the rest zero; reads nothing past p[n-1]"},
		{"load_bf16", true, "load_bf16(p)", "the vector of the W bf16 values at p (a uint16_t pointer, any alignment) as floats, exactly"},
		{"load_part_bf16", true, "load_part_bf16(p, n)", "the first n bf16 values from p as floats, the rest zero; reads nothing past p[n-1]"},
		{"store_f16", true, "store_f16(p, v)", "a statement: v's lanes rounded to f16 (to nearest even; past 65504 inf, NaN quiet), stored at p (a uint16_t pointer, any alignment)"},
		{"store_part_f16", true, "store_part_f16(p, v, n)", "a statement: the first n lanes of v rounded to f16 at p; writes nothing past p[n-1]"},
		{"store_bf16", true, "store_bf16(p, v)", "a statement: v's lanes rounded to bf16 (to nearest even; NaN quiet, its high payload bits kept) at p (a uint16_t pointer, any alignment)"},
		{"store_part_bf16", true, "store_part_bf16(p, v, n)", "a statement: the first n lanes of v rounded to bf16 at p; writes nothing past p[n-1]"},
		-- --kv-dtype q8: each defaults (templates/main.lua) to calls of the
		-- target's "q8" helpers P_q8d(b) and P_q8i(b, i)
		{"q8_scale", false, "q8_scale(b)", "block b's f16 scale d as a float in every lane (b a C lvalue of struct mha_q8_0)"},
		{"q8_ints", false, "q8_ints(b, i)", "the W int8 values of block b from element i on (i a multiple of W), as floats"},
		{"load_q8", false, "load_q8(b, i)", "their product: the W q8_0 elements of block b from element i on, exactly"},
		{"gather", false, "gather(p, s)", "p[0], p[s], ..., p[(width-1) s]; without it templates move lanes one at a time"},
	},
}
