#!/bin/sh
# man.sh MHAGEN: write mhagen(1), in man(7) form, from `MHAGEN --help` and
# `MHAGEN --version` on stdout.  The help's shape is what it reads: the
# first line the synopsis, lines ending in ':' at column 0 headings,
# "  -flag ARG   text" options with continuation lines at column 22, other
# indented lines verbatim, the rest prose.
set -eu
MHAGEN=$1
version=$("$MHAGEN" --version | sed 's/^mhagen //')
"$MHAGEN" --help | awk -v version="$version" '
function esc(s) {
	gsub(/\\/, "\\e", s)
	gsub(/-/, "\\-", s)
	sub(/^[.\047]/, "\\\\\\&&", s)
	return s
}
function verb(on) {
	if (on && !inverb) print ".nf"
	if (!on && inverb) print ".fi"
	inverb = on
}
BEGIN {
	print ".TH MHAGEN 1 \"\" \"mhagen " version "\" \"User Commands\""
	print ".SH NAME"
	print "mhagen \\- write shape-specialized multi-head attention kernels in C"
}
NR == 1 {
	sub(/^usage: /, "")
	print ".SH SYNOPSIS"
	print esc($0)
	print ".SH DESCRIPTION"
	next
}
/^$/ { verb(0); print ".PP"; next }
/^[^ ].*:$/ { verb(0); print ".SS \"" esc($0) "\""; next }
/^  -/ && match($0, /^  [^ ]([^ ]| [^ ])*  +/) {
	verb(0)
	print ".TP"
	flag = substr($0, 3, RLENGTH - 2); sub(/ +$/, "", flag)
	print "\\fB" esc(flag) "\\fR"
	print esc(substr($0, RLENGTH + 1))
	opt = 1
	next
}
opt && /^                      [^ ]/ { sub(/^ +/, ""); print esc($0); next }
/^ / { opt = 0; verb(1); print esc($0); next }
{ if (opt) print ".PP"; opt = 0; verb(0); print esc($0) }
END {
	verb(0)
	print ".SH SEE ALSO"
	print "The README, installed in share/doc/mhagen: the kernel ABI, the"
	print "semantics, tuning, and the CMake, Make and Meson helpers."
}'
