#!/bin/sh
# bench-mca.sh: the tiled kernel's inner loops as compiled, read rather than
# timed (make bench-mca): for targets this machine cannot run (AVX-512 on an
# AMD host, NEON on any x86 one) and to see what a loop costs apart from the
# rest.  The kernel of one spec is generated for TARGET and compiled to
# assembly by clang and by gcc with the target's flags, the body of three
# loops marked as llvm-mca code regions: the full score micro-kernel's d
# loop (qk), the widest P.V micro-kernel's key loop (pv; where P.V
# broadcasts rows of weights, the widest N_pvr kernel's) and the softmax
# pass's loop over a group of exps (softmax).  For each region and compiler:
# its instructions per iteration, FMAs, stack references (spills), and
# llvm-mca's cycles per iteration on each CPU model named; then each
# model's cycles per vector of scores for the two products over dk and dv
# and for the softmax, and the softmax's share of the three.  A model is a
# model: LLVM 14's Zen 3 one keeps a pipe 2 cycles per 256-bit FMA and its
# Neoverse N1 one issues one FMLA a cycle (both cores do 2 a cycle), so
# there the qk and pv figures are twice the truth, and its Skylake-SP one
# counts a 512-bit load as two operations, one on the ports the FMAs use;
# the counts are the compilers' own.
#
# usage: bench-mca.sh TARGET 'SPEC FLAGS' CPU...
# Environment: BUILD (build), MHAGEN ($BUILD/mhagen), CLANG, GCC, CROSS_CLANG,
# CROSS_GCC (the compilers, as the Makefile's).  Writes its files
# under $BUILD/bench-mca/TARGET.  Exit 1 when a region is not found or
# holds no FMA, the two products' not nk and nv for as many query vectors,
# or the softmax's not one per step of each exp's polynomial (the
# generated code's shape changed), or a tool fails.
set -u

BUILD=${BUILD:-build}
MHAGEN=${MHAGEN:-$BUILD/mhagen}

fail() {
	echo "bench-mca: $*" >&2
	exit 1
}

[ $# -ge 3 ] || fail "usage: bench-mca.sh TARGET 'SPEC FLAGS' CPU..."
target=$1 spec=$2
shift 2
command -v llvm-mca > /dev/null ||
	fail "no llvm-mca (Debian's llvm: tools/install-deps.sh installs it)"
dir=$BUILD/bench-mca/$target
mkdir -p "$dir" || fail "cannot make $dir"
rm -f "$dir"/cycles.*

# shellcheck disable=SC2086
"$MHAGEN" $spec --target "$target" -o "$dir/k.c" || fail "$target: mhagen $spec failed"
# shellcheck disable=SC2086
flags=$("$MHAGEN" $spec --target "$target" --emit cflags) || fail "$target: --emit cflags failed"
# dk and dv as the generator resolved them (its registry line)
# shellcheck disable=SC2086
reg=$("$MHAGEN" $spec --target "$target" --emit registry) || fail "$target: --emit registry failed"
dk=$(echo "$reg" | sed -n 's/.*[.]dk = \([0-9]*\).*/\1/p')
dv=$(echo "$reg" | sed -n 's/.*[.]dv = \([0-9]*\).*/\1/p')
if [ -z "$dk" ] || [ -z "$dv" ]; then
	fail "$target: no dk or dv in the registry line: $reg"
fi

# the three loops: the first loop of the qk and pv micro-kernels with the
# most accumulators (the full tiles; causal kernels' qkN_0, all of whose
# rows see the keys) and the softmax's loop that takes its exps a group at
# a time (jj += G, G > 1); each loop's body wrapped in region markers
awk '
function num(s, pre) { sub(".*" pre, "", s); sub("[_(].*", "", s); return s + 0 }
/^static .*_qk[0-9]+(_0)?[(]/ { n = num($0, "_qk"); if (n > qk) { qk = n; qkl = NR } }
/^static .*_pv[0-9]+[(]/ { n = num($0, "_pv"); if (n > pv) { pv = n; pvl = NR } }
# or, where P.V broadcasts rows of weights (N_pvrC: R rows x C vectors of
# columns), the widest of those and its rows
/^[/][*] o_x = .* rows x < [0-9]+ / { r = $0; sub(".*rows x < ", "", r); rows = r + 0 }
/^static .*_pvr[0-9]+[(]/ { n = num($0, "_pvr"); if (n > pvr) { pvr = n; pvrl = NR; pvrows = rows } }
/for [(]; jj [+] [0-9]+ <= kn[[]0[]]; jj [+]= [0-9]+[)] [{]/ && !sml {
	g = $0; sub(".*jj [+]= ", "", g); sub("[)].*", "", g); if (g + 0 > 1) { sml = NR; grp = g + 0 }
}
# the degree of the exp polynomial: the Horner steps on p1 in N_exp2 (in
# its first form, where it has two: #if frac_if, templates/vexp.c.in)
/^static .*_exp2[(]/ { inexp = 1 }
inexp && /^(}|#else)/ { inexp = 0 }
inexp && /(^|[^a-z0-9_])p1 = / { ++degree }
{ line[NR] = $0 }
END {
	if (pvr) { pv = pvr; pvl = pvrl }
	if (!qk || !pv || !sml || !degree) exit 1
	for (i = qkl; i <= NR && line[i] !~ /^\tfor [(]/; ++i) ; mark[i] = "qk"
	for (i = pvl; i <= NR && line[i] !~ /^\tfor [(]/; ++i) ; mark[i] = "pv"
	mark[sml] = "softmax"
	printf "%d %d %d %d %d\n", grp, qk, pv, degree, pvr ? pvrows : 0 > "/dev/stderr"
	for (i = 1; i <= NR; ++i) {
		if (i in close_at) for (k = 1; k <= close_at[i]; ++k)
			print "__asm__ volatile(\"# LLVM-MCA-END " name_at[i, k] "\");"
		print line[i]
		if (!(i in mark)) continue
		print "__asm__ volatile(\"# LLVM-MCA-BEGIN " mark[i] "\");"
		d = gsub(/[{]/, "{", line[i]) - gsub(/[}]/, "}", line[i])
		for (j = i; d > 0; ) { ++j; d += gsub(/[{]/, "{", line[j]) - gsub(/[}]/, "}", line[j]) }
		name_at[j, ++close_at[j]] = mark[i]
	}
}' "$dir/k.c" > "$dir/marked.c" 2> "$dir/group" ||
	fail "$target: the qk, pv or grouped softmax loop or the exp2 is not in the generated file"
# pvrows: 0, or the rows broadcast by a P.V of nv vectors of columns
read -r group nk nv degree pvrows < "$dir/group"

# each compiler: its name and command, one per line
case $target in
neon) compilers="clang ${CROSS_CLANG:-clang --target=aarch64-linux-gnu}
gcc ${CROSS_GCC:-aarch64-linux-gnu-gcc}"
      triple="-mtriple=aarch64" ;;
*)    compilers="clang ${CLANG:-clang}
gcc ${GCC:-gcc}"
      triple="" ;;
esac

echo "$target: mhagen $spec ($flags); softmax exps $group vectors at a time"
printf '  %-6s %-8s %6s %5s %6s' compiler region instrs FMAs spills
for cpu in "$@"; do printf ' %15s' "$cpu"; done
echo
echo "$compilers" | {
IFS='
'
# each line: NAME COMMAND
while read -r cc; do
	name=${cc%% *} cmd=${cc#* }
	s=$dir/$name.s
	# shellcheck disable=SC2086
	(IFS=' '; $cmd -O2 $flags -w -S -o "$s" "$dir/marked.c") ||
		fail "$target: $cmd -S failed"
	# clang for AArch64 prints the markers as // comments, which llvm-mca
	# 14 does not read
	if ! sed 's|^[[:space:]]*// LLVM-MCA-|# LLVM-MCA-|' "$s" > "$s.tmp" ||
		! mv "$s.tmp" "$s"; then
		fail "$target: cannot rewrite $s"
	fi
	for cpu in "$@"; do
		# shellcheck disable=SC2086
		llvm-mca $triple -mcpu="$cpu" -iterations=200 "$s" > "$dir/$name.$cpu.mca" 2>&1 ||
			{ cat "$dir/$name.$cpu.mca" >&2; fail "$target: llvm-mca -mcpu=$cpu failed"; }
	done
	# the markers hold no register: a compiler may move some of an
	# iteration's FMAs across them (clang 14 for NEON with --nk 6 --nv 6:
	# 8 of the P.V loop's 24 after the end), which the checks below report
	moved="
(or $name moved some across the region's markers: $s)"
	for r in qk pv softmax; do
		# (its first copy: where a compiler unrolls the loop, each copy of
		# the body has its markers, and llvm-mca reads the first)
		body=$(awk -v r="$r" '$0 ~ "LLVM-MCA-BEGIN " r "$" { on = 1; next }
			$0 ~ "LLVM-MCA-END " r "$" { exit }
			on && $1 !~ /^([#.]|\/\/)/ && $1 !~ /:$/ && NF' "$s")
		ins=$(echo "$body" | grep -c .)
		fma=$(echo "$body" | grep -c -E '^[[:space:]]*(vfn?madd|fmla)')
		spill=$(echo "$body" | grep -c -E '%r[sb]p[)]|\[sp')
		# the regions are the loops meant: the products' hold FMAs, the
		# softmax's one per step of each exp's polynomial
		[ "$fma" -gt 0 ] || fail "$target: $name's $r region holds no FMA"
		# as many query vectors (mq / width) in both products' tiles
		case $r in
		qk) qv=$((fma / nk)); [ $((qv * nk)) -eq "$fma" ] ||
			fail "$target: $name's qk region holds $fma FMAs, not a multiple of nk = $nk$moved" ;;
		pv) if [ "$pvrows" -gt 0 ]; then
			[ "$fma" -eq $((pvrows * nv)) ] ||
				fail "$target: $name's pv region holds $fma FMAs, not $pvrows rows x $nv vectors$moved"
		    else
			[ "$fma" -eq $((qv * nv)) ] ||
				fail "$target: $name's pv region holds $fma FMAs, not $qv query vectors x nv = $nv$moved"
		    fi ;;
		esac
		[ "$r" != softmax ] || [ "$fma" -eq $((degree * group)) ] ||
			fail "$target: $name's softmax region holds $fma FMAs, not $degree for each of $group exps$moved"
		printf '  %-6s %-8s %6d %5d %6d' "$name" "$r" "$ins" "$fma" "$spill"
		for cpu in "$@"; do
			c=$(awk -v r="$r" '/Code Region - / { on = ($NF == r) }
				on && /^Total Cycles:/ { print $3 / 200; exit }' "$dir/$name.$cpu.mca")
			[ -n "$c" ] || fail "$target: no $r region in llvm-mca's output"
			printf ' %15.2f' "$c"
			echo "$name $r $cpu $c $fma" >> "$dir/cycles.$$"
		done
		echo
	done
done
# per vector of scores: each FMA of qk is one step of dk for one vector of
# scores, each of pv one output column for one
for cc in clang gcc; do
	for cpu in "$@"; do
		awk -v cc="$cc" -v cpu="$cpu" -v dk="$dk" -v dv="$dv" -v g="$group" '
			$1 == cc && $3 == cpu { c[$2] = $4; f[$2] = $5 }
			END {
				if (!("qk" in c)) exit
				q = c["qk"] * dk / f["qk"]; p = c["pv"] * dv / f["pv"]; s = c["softmax"] / g
				printf "  %-6s %-15s cycles per vector of scores: qk %.2f, pv %.2f, softmax %.2f (%.1f%% of the three)\n",
					cc, cpu, q, p, s, 100 * s / (q + p + s)
			}' "$dir/cycles.$$"
	done
done
rm -f "$dir/cycles.$$"
}
