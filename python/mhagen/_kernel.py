"""Generating, compiling, caching, loading and calling one kernel.

The kernel's contract is the README's "Kernel ABI": NAME_args, taking its
inputs as one struct mha_args, on dense float32 arrays.  The struct's
layout and what a kernel was generated for (heads, head dims, fixed
lengths, mask, layout, scale, the inputs it reads) are read back from the
header mhagen writes beside it, so a spec given as a --spec file or a
tuning database is described the same way, and fields the contract gains
later need no change here.
"""

import ctypes
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading

import numpy as np


class MhagenError(RuntimeError):
    """mhagen, the C compiler or the loader failed.  The message is one
    line; .log holds the whole output of the failing command, if any."""

    def __init__(self, message, log=""):
        super().__init__(message)
        self.log = log


# Flags the package sets itself: the caller cannot.
_OWN_FLAGS = ("-o", "--header", "--emit")

_loaded = {}                    # (program, argv, cc, cflags, dir) -> Kernel
_lock = threading.Lock()


def cache_dir():
    """Where compiled kernels are kept: $MHAGEN_CACHE_DIR, else
    $XDG_CACHE_HOME/mhagen, else ~/.cache/mhagen."""
    d = os.environ.get("MHAGEN_CACHE_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mhagen")


def _program(mhagen):
    """The mhagen program: the argument, else $MHAGEN, else on PATH."""
    path = mhagen or os.environ.get("MHAGEN") or shutil.which("mhagen")
    if not path:
        raise MhagenError("mhagen: the mhagen program is not on PATH "
                          "(install it, or set MHAGEN=/path/to/mhagen)")
    return path


def _spec_argv(args, spec):
    """Spec keywords as flags: h=8 -> --h 8, seq_kv=64 -> --seq-kv 64,
    mask=("causal", "padding") -> --mask causal,padding, weights=True ->
    --weights; None and False leave a flag out.  args (a list of flag
    strings) come first."""
    argv = [str(a) for a in (args or ())]
    for key, val in spec.items():
        flag = "--" + key.replace("_", "-")
        if val is None or val is False:
            continue
        if val is True:
            argv.append(flag)
            continue
        if isinstance(val, (list, tuple)):
            val = ",".join(str(x) for x in val)
        argv += [flag, str(val)]
    for a in argv:
        if a in _OWN_FLAGS:
            raise ValueError("mhagen.kernel: %s is set by the package, not "
                             "the caller" % a)
    return argv


def _run(cmd, what):
    """Run cmd; its stdout, or MhagenError naming what with the first line
    of its messages."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
    except OSError as e:
        raise MhagenError("mhagen: cannot run %s (%s): %s" % (what, cmd[0], e))
    if p.returncode != 0:
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        first = lines[0] if lines else "exit status %d" % p.returncode
        for l in lines:
            if "error" in l:
                first = l
                break
        if not first.startswith("mhagen: "):
            first = "mhagen: %s failed: %s" % (what, first.strip())
        raise MhagenError(first, p.stderr)
    return p.stdout, p.stderr


def _describe(header, source):
    """What the kernel computes, from the header's spec comment ("h=8
    kv_heads=8 dk=64 dv=64 seq_q=any seq_kv=any mask=none ... layout=bshd
    scale=0x1p-3f") and the command line the kernel file starts with (for
    the window)."""
    pairs = dict(re.findall(r"\b([a-z_-]+)=(\S+)", header))
    need = ("h", "kv_heads", "dk", "dv", "seq_q", "seq_kv", "mask", "layout",
            "scale")
    missing = [k for k in need if k not in pairs]
    if missing:
        raise MhagenError("mhagen: the generated header does not state %s"
                          % ", ".join(missing))
    spec = {k: int(pairs[k]) for k in ("h", "kv_heads", "dk", "dv")}
    for k in ("seq_q", "seq_kv"):
        spec[k] = None if pairs[k] == "any" else int(pairs[k])
    spec["mask"] = () if pairs["mask"] == "none" else tuple(
        pairs["mask"].split(","))
    spec["layout"] = pairs["layout"]
    spec["packed"] = pairs.get("packed", "none").rstrip(":")
    spec["varlen"] = pairs.get("varlen", "none").rstrip(":")
    # --dtype (q and out); k and v the same unless the header says kv-dtype
    spec["dtype"] = pairs.get("dtype", "f32").rstrip(":")
    spec["kv_dtype"] = pairs.get("kv-dtype", spec["dtype"]).rstrip(":")
    spec["causal_align"] = pairs.get("causal-align", "bottom-right")
    spec["scale"] = float.fromhex(pairs["scale"].rstrip("f"))
    spec["target"] = pairs.get("target", "")
    spec["softcap"] = float.fromhex(pairs["softcap"].rstrip("f")) \
        if "softcap" in pairs else 0.0
    # inputs beyond the nine, per query head
    spec["alibi_slopes"] = "\n * alibi_slopes: [" in header
    spec["sinks"] = "\n * sinks: [" in header
    spec["window"] = 0
    spec["window_left"] = spec["window_right"] = -1
    spec["mask_dims"] = ()
    m = re.search(r"^ \* (mhagen .*)$", source, re.M)
    if m:
        words = shlex.split(m.group(1))
        for flag in ("--window", "--window-left", "--window-right"):
            if flag in words[:-1]:
                spec[flag[2:].replace("-", "_")] = int(
                    words[words.index(flag) + 1])
        if "--mask-dims" in words[:-1]:
            spec["mask_dims"] = tuple(
                words[words.index("--mask-dims") + 1].split(","))
    return spec


def _args_struct(header):
    """A ctypes Structure laid out as the header's struct mha_args: its
    fields are pointers (c_void_p) or size_t, in order."""
    m = re.search(r"struct mha_args \{(.*?)\n\};", header, re.S)
    if not m:
        raise MhagenError("mhagen: the generated header does not define "
                          "struct mha_args")
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    fields = []
    for decl in body.split(";"):
        decl = decl.strip()
        if not decl:
            continue
        d = re.match(r"(?:const\s+)?(\w+)\s*(.*)$", decl, re.S)
        base = d.group(1)
        for name in d.group(2).split(","):
            name = name.strip()
            if name.startswith("*"):
                fields.append((name.lstrip("* "), ctypes.c_void_p))
            elif base == "size_t":
                fields.append((name, ctypes.c_size_t))
            else:
                raise MhagenError("mhagen: struct mha_args has a field "
                                  "'%s %s' the package cannot lay out"
                                  % (base, name))
    return type("mha_args", (ctypes.Structure,), {"_fields_": fields})


def _compile(cc, cflags, target_flags, source, name, directory):
    """The shared object of source in directory, compiled unless a file of
    the same name and hash (of the bytes and the command) is there."""
    cmd = shlex.split(cc) + ["-std=c11"] + shlex.split(cflags) + \
        shlex.split(target_flags) + ["-fPIC", "-shared"]
    h = hashlib.sha256(source.encode() + b"\0" + " ".join(cmd).encode())
    path = os.path.join(directory, "%s-%s.so" % (name, h.hexdigest()[:16]))
    if os.path.exists(path):
        return path
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise MhagenError("mhagen: cannot make the cache directory %s: %s"
                          % (directory, e.strerror))
    # compile beside the final name, then rename: readers never see half
    fd, tmp_so = tempfile.mkstemp(prefix=name + "-", suffix=".so.tmp",
                                  dir=directory)
    os.close(fd)
    src, tmp_c = path[:-3] + ".c", None
    try:
        fd, tmp_c = tempfile.mkstemp(prefix=name + "-", suffix=".c",
                                     dir=directory)
        with os.fdopen(fd, "w") as f:
            f.write(source)
        _run(cmd + ["-o", tmp_so, tmp_c], "the C compiler (%s)" % cc)
        os.replace(tmp_c, src)
        os.replace(tmp_so, path)
    finally:
        for t in (tmp_so, tmp_c):
            if t and os.path.exists(t):
                os.unlink(t)
    return path


class Kernel:
    """A loaded kernel: call it as kernel(q, k, v, kv_len=None, bias=None,
    out=None, alibi_slopes=None, sinks=None, bool_mask=None,
    key_mask=None, q_len=None, cu_seqlens_q=None, cu_seqlens_k=None) -> out
    (NAME_args).

    .name      the kernel's name (the canonical name unless --name)
    .spec      what it computes: h, kv_heads, dk, dv, seq_q and seq_kv (None
               when any length works), mask (a tuple of words), mask_dims
               (a tuple of "b" and "h": the bias's and bool_mask's leading
               dimensions), layout (bshd, bhsd or sbhd: q is (batch, seq_q,
               h, dk), (batch, h, seq_q, dk) or (seq_q, batch, h, dk)),
               causal_align, window, scale, softcap (0: none), target,
               varlen (none, padded or packed), dtype (f32, or f16: q and
               out are numpy.float16, or bf16: numpy.uint16 holding
               bfloat16 bits), kv_dtype (the dtype's, or f32, f16, bf16
               as before, or q8: k and v are mhagen.Q8_0 blocks, the last
               dimension dk / 32 or dv / 32; quantize_q8_0 makes them),
               and whether it reads alibi_slopes and
               sinks (each float32 of shape (h,))
    .path      the shared object in the cache
    .source    the generated C
    .notes     what mhagen said on stderr (e.g. which tuning record)
    """

    def __init__(self, path, name, spec, source, notes, args):
        self.path, self.name, self.spec = path, name, spec
        self.source, self.notes = source, notes
        self._args = args
        try:
            self._lib = ctypes.CDLL(path)
            fn = getattr(self._lib, name + "_args")
        except (OSError, AttributeError) as e:
            raise MhagenError("mhagen: cannot load %s_args from %s: %s"
                              % (name, path, e))
        fn.argtypes = [ctypes.POINTER(args)]
        fn.restype = None
        self._fn = fn

    def __repr__(self):
        return "<mhagen.Kernel %s>" % self.name

    def shapes(self, batch, seq_q, seq_kv):
        """The shapes of q, k, v and out for these sizes, in the kernel's
        layout."""
        s = self.spec
        # q8: k and v hold a block per 32 elements of a row
        n = 32 if s["kv_dtype"] == "q8" else 1
        dk, dv = s["dk"] // n, s["dv"] // n
        if s["layout"] == "bhsd":
            return ((batch, s["h"], seq_q, s["dk"]),
                    (batch, s["kv_heads"], seq_kv, dk),
                    (batch, s["kv_heads"], seq_kv, dv),
                    (batch, s["h"], seq_q, s["dv"]))
        if s["layout"] == "sbhd":
            return ((seq_q, batch, s["h"], s["dk"]),
                    (seq_kv, batch, s["kv_heads"], dk),
                    (seq_kv, batch, s["kv_heads"], dv),
                    (seq_q, batch, s["h"], s["dv"]))
        return ((batch, seq_q, s["h"], s["dk"]),
                (batch, seq_kv, s["kv_heads"], dk),
                (batch, seq_kv, s["kv_heads"], dv),
                (batch, seq_q, s["h"], s["dv"]))

    def _names(self):
        q8 = " / 32" if self.spec["kv_dtype"] == "q8" else ""
        if self.spec["layout"] == "bhsd":
            return ("(batch, h, seq_q, dk)",
                    "(batch, kv_heads, seq_kv, dk%s)" % q8,
                    "(batch, kv_heads, seq_kv, dv%s)" % q8,
                    "(batch, h, seq_q, dv)")
        if self.spec["layout"] == "sbhd":
            return ("(seq_q, batch, h, dk)",
                    "(seq_kv, batch, kv_heads, dk%s)" % q8,
                    "(seq_kv, batch, kv_heads, dv%s)" % q8,
                    "(seq_q, batch, h, dv)")
        return ("(batch, seq_q, h, dk)",
                "(batch, seq_kv, kv_heads, dk%s)" % q8,
                "(batch, seq_kv, kv_heads, dv%s)" % q8,
                "(batch, seq_q, h, dv)")

    def _packed(self, q, k, v, cu_seqlens_q, cu_seqlens_k):
        """--varlen packed: batch, max_seqlen_q and max_seqlen_k (the spec's
        fixed lengths, else the longest sequence's) from the offsets, and
        the shapes and names of q, k, v and out."""
        s = self.spec
        for arg, a in (("cu_seqlens_q", cu_seqlens_q),
                       ("cu_seqlens_k", cu_seqlens_k)):
            if a is None:
                raise ValueError("%s: required: the kernel was generated "
                                 "with --varlen packed (int32, shape "
                                 "(batch + 1,))" % arg)
            _check_array(arg, a, np.int32)
            if a.ndim != 1 or a.shape[0] < 1:
                raise ValueError("%s: shape %s, expected (batch + 1,)"
                                 % (arg, a.shape))
        if cu_seqlens_k.shape != cu_seqlens_q.shape:
            raise ValueError("cu_seqlens_k: shape %s, expected that of "
                             "cu_seqlens_q %s" % (cu_seqlens_k.shape,
                                                  cu_seqlens_q.shape))
        q8 = " / 32" if s["kv_dtype"] == "q8" else ""
        per = 32 if q8 else 1  # q8: a block per 32 elements of k and v
        names = ("(total_q, h, dk)", "(total_k, kv_heads, dk%s)" % q8,
                 "(total_k, kv_heads, dv%s)" % q8, "(total_q, h, dv)")
        for arg, a, n in (("q", q, names[0]), ("k", k, names[1]),
                          ("v", v, names[2])):
            if a.ndim != 3:
                raise ValueError("%s: expected 3 dimensions %s (--varlen "
                                 "packed), got shape %s" % (arg, n, a.shape))
        lens = []
        for arg, cu, total, fixed, flag in (
                ("cu_seqlens_q", cu_seqlens_q, q.shape[0], s["seq_q"],
                 "--seq"),
                ("cu_seqlens_k", cu_seqlens_k, k.shape[0], s["seq_kv"],
                 "--seq-kv")):
            d = np.diff(cu)
            if cu[0] != 0 or (d < 0).any() or cu[-1] != total:
                raise ValueError("%s: must rise from 0 to the rows of %s "
                                 "(%d), got %s" % (arg, arg[-1], total,
                                                   cu.tolist()))
            longest = int(d.max()) if d.size else 0
            if fixed is not None and longest > fixed:
                raise ValueError("%s: a sequence of %d rows, but the kernel "
                                 "was generated for %s %d"
                                 % (arg, longest, flag, fixed))
            lens.append(fixed if fixed is not None else longest)
        batch = cu_seqlens_q.shape[0] - 1
        seq_q, seq_kv = max(lens[0], 1), lens[1]
        want = ((q.shape[0], s["h"], s["dk"]),
                (k.shape[0], s["kv_heads"], s["dk"] // per),
                (k.shape[0], s["kv_heads"], s["dv"] // per),
                (q.shape[0], s["h"], s["dv"]))
        return batch, seq_q, seq_kv, want, names

    def __call__(self, q, k, v, kv_len=None, bias=None, out=None,
                 alibi_slopes=None, sinks=None, bool_mask=None,
                 key_mask=None, q_len=None, cu_seqlens_q=None,
                 cu_seqlens_k=None):
        s = self.spec
        names = self._names()
        lay = s["layout"]
        vl = s["varlen"]
        # --kv-dtype: k and v as numpy.float16 (f16), or as numpy.uint16
        # holding bfloat16 bits (bf16; numpy has no bfloat16)
        # --dtype: q and out likewise
        kvt = _KV_DTYPES[s["kv_dtype"]]
        qt = _KV_DTYPES[s["dtype"]]
        for arg, a, t in (("q", q, qt), ("k", k, kvt), ("v", v, kvt)):
            _check_array(arg, a, t)
        if vl == "packed":
            batch, seq_q, seq_kv, want, names = self._packed(
                q, k, v, cu_seqlens_q, cu_seqlens_k)
        else:
            for arg, a in (("cu_seqlens_q", cu_seqlens_q),
                           ("cu_seqlens_k", cu_seqlens_k)):
                if a is not None:
                    raise ValueError("%s: the kernel has no packed sequences "
                                     "(generate it with --varlen packed)"
                                     % arg)
            for arg, a, n in (("q", q, names[0]), ("k", k, names[1]),
                              ("v", v, names[2])):
                if a.ndim != 4:
                    raise ValueError("%s: expected 4 dimensions %s (layout "
                                     "%s), got shape %s"
                                     % (arg, n, lay, a.shape))
            seq = {"bshd": 1, "bhsd": 2, "sbhd": 0}[lay]
            batch = q.shape[1] if lay == "sbhd" else q.shape[0]
            seq_q, seq_kv = q.shape[seq], k.shape[seq]
            want = self.shapes(batch, seq_q, seq_kv)
        for arg, a, w, n in zip(("q", "k", "v"), (q, k, v), want, names):
            if a.shape != w:
                raise ValueError("%s: shape %s, expected %s = %s (layout %s)"
                                 % (arg, a.shape, n, w, lay))
        for what, got, fixed, flag in (("seq_q", seq_q, s["seq_q"], "--seq"),
                                       ("seq_kv", seq_kv, s["seq_kv"],
                                        "--seq-kv")):
            if fixed is not None and got != fixed and vl != "packed":
                raise ValueError("%s: %s is %d, but the kernel was generated "
                                 "for %s %d" % ("q" if what == "seq_q" else
                                                "k", what, got, flag, fixed))
        if seq_q < 1 and batch > 0:
            raise ValueError("q: seq_q is 0; a kernel needs at least one "
                             "query row")
        # the optional inputs, each read exactly when the kernel was
        # generated for it: why it is (or is not), how to ask for it, its
        # dtype, shape and the shape's name
        h = s["h"]
        # the bias's and boolean mask's shape: --mask-dims' leading
        # dimensions, then (seq_q, seq_kv)
        dims = s["mask_dims"]
        pshape = ((batch,) if "b" in dims else ()) + \
            ((h,) if "h" in dims else ()) + (seq_q, seq_kv)
        pname = "(%s)" % ", ".join((["batch"] if "b" in dims else []) +
                                   (["h"] if "h" in dims else []) +
                                   ["seq_q", "seq_kv"])
        # boolean masks as NumPy's bool (one byte, 0 or 1) or uint8
        bool_mask, key_mask = _bytes(bool_mask), _bytes(key_mask)
        # q_len is optional with --varlen padded (None: seq_q each)
        if q_len is not None and vl != "padded":
            raise ValueError("q_len: the kernel has no per-sequence query "
                             "lengths (generate it with --varlen padded)")
        if q_len is not None:
            _check_array("q_len", q_len, np.int32)
            if q_len.shape != (batch,):
                raise ValueError("q_len: shape %s, expected (batch,) = %s"
                                 % (q_len.shape, (batch,)))
        for arg, a, reads, why, why_not, how, dtype, shape, sname in (
                ("kv_len", kv_len, "padding" in s["mask"] or
                 vl == "padded", "has a padding mask or --varlen padded",
                 "has no padding mask", "mask containing 'padding' or "
                 "--varlen padded", np.int32, (batch,), "(batch,)"),
                ("bias", bias, "bias" in s["mask"], "has a bias mask",
                 "has no bias mask", "mask containing 'bias'", np.float32,
                 pshape, pname),
                ("bool_mask", bool_mask, "bool" in s["mask"],
                 "has a boolean mask", "has no boolean mask",
                 "mask containing 'bool'", np.uint8, pshape, pname),
                ("key_mask", key_mask, "keys" in s["mask"],
                 "has a key mask", "has no key mask",
                 "mask containing 'keys'", np.uint8, (batch, seq_kv),
                 "(batch, seq_kv)"),
                ("alibi_slopes", alibi_slopes, s["alibi_slopes"],
                 "was generated with --alibi", "reads none", "--alibi",
                 np.float32, (h,), "(h,)"),
                ("sinks", sinks, s["sinks"], "was generated with --sinks",
                 "reads none", "--sinks", np.float32, (h,), "(h,)")):
            if not reads:
                if a is not None:
                    raise ValueError("%s: the kernel %s (generate it with %s)"
                                     % (arg, why_not, how))
                continue
            if a is None:
                raise ValueError("%s: required: the kernel %s (%s, shape %s "
                                 "= %s)" % (arg, why, np.dtype(dtype).name,
                                            sname, shape))
            _check_array(arg, a, dtype)
            if a.shape != shape:
                raise ValueError("%s: shape %s, expected %s = %s"
                                 % (arg, a.shape, sname, shape))
        if out is None:
            # rows past a sequence's queries (--varlen) are left: zeros
            out = np.zeros(want[3], dtype=qt) if vl != "none" \
                else np.empty(want[3], dtype=qt)
        else:
            _check_array("out", out, qt)
            if out.shape != want[3]:
                raise ValueError("out: shape %s, expected %s = %s (layout %s)"
                                 % (out.shape, names[3], want[3], lay))
            if not out.flags.writeable:
                raise ValueError("out: read-only")
            for arg, a in (("q", q), ("k", k), ("v", v), ("kv_len", kv_len),
                           ("bias", bias), ("alibi_slopes", alibi_slopes),
                           ("sinks", sinks), ("bool_mask", bool_mask),
                           ("key_mask", key_mask), ("q_len", q_len),
                           ("cu_seqlens_q", cu_seqlens_q),
                           ("cu_seqlens_k", cu_seqlens_k)):
                if a is not None and np.may_share_memory(out, a):
                    raise ValueError("out: overlaps %s" % arg)
        if batch == 0:
            return out
        def ptr(a):
            return None if a is None else a.ctypes.data
        a = self._args(q=ptr(q), k=ptr(k), v=ptr(v), out=ptr(out),
                       batch=batch, seq_q=seq_q, seq_kv=seq_kv,
                       kv_len=ptr(kv_len), bias=ptr(bias))
        if s["alibi_slopes"]:
            a.alibi_slopes = ptr(alibi_slopes)
        if s["sinks"]:
            a.sinks = ptr(sinks)
        if "bool" in s["mask"]:
            a.bool_mask = ptr(bool_mask)
        if "keys" in s["mask"]:
            a.key_mask = ptr(key_mask)
        if vl == "padded":
            a.q_len = ptr(q_len)
        elif vl == "packed":
            a.cu_seqlens_q = ptr(cu_seqlens_q)
            a.cu_seqlens_k = ptr(cu_seqlens_k)
        self._fn(ctypes.byref(a))
        return out


def _bytes(a):
    """A NumPy bool array as the uint8 array of its bytes (True is 1);
    anything else as it is."""
    if isinstance(a, np.ndarray) and a.dtype == np.bool_:
        return a.view(np.uint8)
    return a


# The NumPy dtype of k and v for each --kv-dtype (and of q and out for each
# --dtype).
# --kv-dtype q8: ggml's block_q8_0, struct mha_q8_0 (runtime/mha_abi.h):
# an f16 scale's bits, then 32 int8 values; element i is d * qs[i]
Q8_0 = np.dtype([("d", "<u2"), ("qs", "i1", (32,))])

_KV_DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16,
              "q8": Q8_0}


def quantize_q8_0(x):
    """x (float32, its last dimension a multiple of 32) as q8_0 blocks
    (Q8_0, the last dimension / 32), as ggml's quantize_row_q8_0_ref and
    mhagen's runtime (mha_kv_store) quantize: per block d = max|x| / 127,
    stored as f16, each value round(x * (1 / d)) half away from zero (0
    for an all-zero block); a block holding an inf or NaN gets a NaN scale
    and zeros."""
    x = np.asarray(x, np.float32)
    if x.ndim < 1 or x.shape[-1] % 32:
        raise ValueError("x: shape %s, the last dimension must be a "
                         "multiple of 32 (q8_0 blocks)" % (x.shape,))
    blocks = x.reshape(x.shape[:-1] + (x.shape[-1] // 32, 32))
    finite = np.isfinite(blocks).all(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        amax = np.where(finite, np.abs(blocks).max(axis=-1), 0)
        d = np.where(finite, amax / np.float32(127), np.float32(np.nan))
        d = d.astype(np.float32)
        inv = np.where(finite & (d != 0), np.float32(1) / d, 0)
        y = blocks * inv.astype(np.float32)[..., None]
        y = np.where(finite[..., None], y, 0).astype(np.float32)
        # C's roundf: halves away from zero (numpy.round goes to even)
        a = np.abs(y)
        r = np.floor(a)
        r = np.where(a - r >= np.float32(0.5), r + 1, r)
    out = np.empty(blocks.shape[:-1], Q8_0)
    out["d"] = d.astype(np.float16).view(np.uint16)
    out["qs"] = (np.sign(y) * r).astype(np.int8)
    return out


def dequantize_q8_0(b):
    """q8_0 blocks (Q8_0) as the float32 values they hold, exactly: the
    last dimension times 32."""
    b = np.asarray(b)
    if b.dtype != Q8_0:
        raise TypeError("b: dtype %s, expected mhagen.Q8_0" % (b.dtype,))
    d = b["d"].view(np.float16).astype(np.float32)
    x = d[..., None] * b["qs"].astype(np.float32)
    return x.reshape(b.shape[:-1] + (b.shape[-1] * 32,))


def _check_array(arg, a, dtype):
    """a must be a C-contiguous, aligned NumPy array of dtype."""
    if not isinstance(a, np.ndarray):
        raise TypeError("%s: expected a numpy.ndarray, got %s"
                        % (arg, type(a).__name__))
    if a.dtype != dtype and dtype == Q8_0:
        raise TypeError("%s: dtype %s, the kernel takes q8_0 blocks "
                        "(mhagen.Q8_0; mhagen.quantize_q8_0(%s) makes them)"
                        % (arg, a.dtype, arg))
    if a.dtype != dtype:
        raise TypeError("%s: dtype %s, the kernel takes %s (convert with "
                        "%s.astype(numpy.%s))" % (arg, a.dtype,
                                                  np.dtype(dtype).name, arg,
                                                  np.dtype(dtype).name))
    if not a.flags.c_contiguous:
        raise ValueError("%s: not C-contiguous (strides %s); pass "
                         "numpy.ascontiguousarray(%s)" % (arg, a.strides, arg))
    if not a.flags.aligned:
        raise ValueError("%s: not aligned to its %d-byte elements"
                         % (arg, a.itemsize))


def kernel(args=None, mhagen=None, cc=None, cflags="-O2", cache=None, **spec):
    """The kernel for a spec, generated, compiled (or found in the cache)
    and loaded.

    spec keywords are mhagen's flags: kernel(h=8, dk=64, seq=128,
    mask="causal", target="avx2"); args is a list of flags given first
    (["--spec", "attn.spec"], ["--tuning-db", "tune.jsonl"]).  mhagen is
    the program (default $MHAGEN, else on PATH); cc the compiler command
    (default $CC, else cc); cflags the flags besides the target's, which
    `mhagen --emit cflags` gives; cache the directory (default
    cache_dir()).  A kernel already loaded in this process is returned
    again.  Raises MhagenError (one line) when mhagen refuses the spec or
    the compiler fails.
    """
    prog = _program(mhagen)
    argv = _spec_argv(args, spec)
    cc = cc or os.environ.get("CC") or "cc"
    directory = cache or cache_dir()
    key = (prog, tuple(argv), cc, cflags, directory)
    with _lock:
        if key in _loaded:
            return _loaded[key]
    with tempfile.TemporaryDirectory(prefix="mhagen-py-") as tmp:
        kc, kh = os.path.join(tmp, "kernel.c"), os.path.join(tmp, "kernel.h")
        _, notes = _run([prog] + argv + ["-o", kc, "--header", kh], "mhagen")
        with open(kc) as f:
            source = f.read()
        with open(kh) as f:
            header = f.read()
    flags, _ = _run([prog] + argv + ["--emit", "cflags"], "mhagen")
    m = re.search(r"^void (\w+)_args\(const struct mha_args \*a\);", header,
                  re.M)
    if not m:
        raise MhagenError("mhagen: no kernel prototype in the generated "
                          "header")
    name = m.group(1)
    spec_of = _describe(header, source)
    if spec_of["packed"] != "none":
        raise ValueError("mhagen.kernel: packed=%s: the package passes q, k "
                         "and v as separate arrays; generate the kernel "
                         "without --packed and pass views of the packed "
                         "array (np.ascontiguousarray(qkv[:, :, 0]) ...), or "
                         "call the C function with the packed buffer"
                         % spec_of["packed"])
    args = _args_struct(header)
    path = _compile(cc, cflags, flags.strip(), source, name, directory)
    k = Kernel(path, name, spec_of, source, notes, args)
    with _lock:
        return _loaded.setdefault(key, k)
