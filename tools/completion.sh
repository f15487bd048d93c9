#!/bin/sh
# completion.sh MHAGEN: write mhagen's bash completion on stdout.  The flags
# and the target names come from `MHAGEN --help`, so the completion follows
# the program; the values of the word-valued flags are those --help states.
set -eu
MHAGEN=$1
help=$("$MHAGEN" --help)
flags=$(printf '%s\n' "$help" | sed -n 's/^  \(-[-a-z]*\)\(, \(--[a-z]*\)\)\{0,1\}.*/\1 \3/p' | tr '\n' ' ' | tr -s ' ')
targets=$(printf '%s\n' "$help" | sed -n '/^targets/,$s/^  \([a-z0-9_]*\) .*/\1/p' | tr '\n' ' ')
cat <<END
# bash completion for mhagen; generated from mhagen --help by
# tools/completion.sh.
_mhagen()
{
	local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]}
	local words
	case \$prev in
	-o|--header|--spec|--tuning-db|--depfile|--db)
		compopt -o filenames 2>/dev/null
		COMPREPLY=(\$(compgen -f -- "\$cur")); return ;;
	--template-dir)
		compopt -o filenames 2>/dev/null
		COMPREPLY=(\$(compgen -d -- "\$cur")); return ;;
	--target) words="${targets}native" ;;
	--emit) words="kernel exp name registry cflags targets" ;;
	--mask) words="none causal padding bias bool keys causal,padding causal,bias causal,bool" ;;
	--mask-dims) words="none b h b,h" ;;
	--causal-align) words="bottom-right top-left" ;;
	--layout) words="bshd bhsd sbhd" ;;
	--packed) words="none qkv kv" ;;
	--varlen) words="none padded packed" ;;
	--algo) words="tiled rows auto" ;;
	--exp) words="accurate fast" ;;
	--threads) words="none openmp" ;;
	--weights) words="true false" ;;
	*)
		words="${flags}"
		[ "\$COMP_CWORD" -eq 1 ] && words="\$words tune" ;;
	esac
	COMPREPLY=(\$(compgen -W "\$words" -- "\$cur"))
}
complete -F _mhagen mhagen
END
