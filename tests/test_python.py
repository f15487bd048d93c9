"""The Python package (python/mhagen) against the runtime's reference
attention: kernels of several specs generated, compiled, cached and called
on NumPy arrays, compared with runtime/mha_ref.c (built into a shared
object, MHAGEN_PYREF, behind tests/pyref.c); the cache; every argument
check; installing the package with pip.  Run by tests/test_python.c with
MHAGEN (the program), MHAGEN_PYREF and PYTHONPATH=python set."""

import ctypes
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import mhagen
from mhagen import _kernel

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _ref_lib():
    lib = ctypes.CDLL(os.environ["MHAGEN_PYREF"])
    fn = lib.pyref_attention
    fn.argtypes = [ctypes.c_size_t] * 4 + [ctypes.c_char_p] * 3 + \
        [ctypes.c_double, ctypes.c_size_t] + [ctypes.c_void_p] * 4 + \
        [ctypes.c_size_t] * 3 + [ctypes.c_void_p] * 2 + \
        [ctypes.c_double] + [ctypes.c_void_p] * 2 + \
        [ctypes.c_char_p] + [ctypes.c_void_p] * 2 + [ctypes.c_char_p] + \
        [ctypes.c_void_p] * 3 + [ctypes.c_long] * 2
    fn.restype = ctypes.c_int
    return lib, fn


_LIB, _REF = _ref_lib()


def reference(kern, q, k, v, kv_len=None, bias=None, alibi_slopes=None,
              sinks=None, bool_mask=None, key_mask=None, q_len=None,
              cu_seqlens_q=None, cu_seqlens_k=None):
    """The reference attention (double accumulation) for what kern says it
    computes; rows past a sequence's queries (--varlen) are zeros."""
    s = kern.spec
    lay = s["layout"]
    if s["varlen"] == "packed":
        batch = cu_seqlens_q.shape[0] - 1
        seq_q = s["seq_q"] or max(int(np.diff(cu_seqlens_q).max()), 1)
        seq_kv = s["seq_kv"] or int(np.diff(cu_seqlens_k).max())
        out = np.zeros((q.shape[0], s["h"], s["dv"]), np.float32)
    else:
        seq = {"bshd": 1, "bhsd": 2, "sbhd": 0}[lay]
        seq_q, seq_kv = q.shape[seq], k.shape[seq]
        batch = q.shape[1] if lay == "sbhd" else q.shape[0]
        out = np.zeros(kern.shapes(batch, seq_q, seq_kv)[3], np.float32)
    rc = _REF(s["h"], s["kv_heads"], s["dk"], s["dv"],
              (",".join(s["mask"]) or "none").encode(),
              s["causal_align"].encode(), lay.encode(), s["scale"],
              s["window"], q.ctypes.data, k.ctypes.data, v.ctypes.data,
              out.ctypes.data, batch, seq_q, seq_kv,
              None if kv_len is None else kv_len.ctypes.data,
              None if bias is None else bias.ctypes.data, s["softcap"],
              None if alibi_slopes is None else alibi_slopes.ctypes.data,
              None if sinks is None else sinks.ctypes.data,
              ",".join(s["mask_dims"]).encode(),
              None if bool_mask is None else bool_mask.ctypes.data,
              None if key_mask is None else key_mask.ctypes.data,
              s["varlen"].encode(),
              None if q_len is None else q_len.ctypes.data,
              None if cu_seqlens_q is None else cu_seqlens_q.ctypes.data,
              None if cu_seqlens_k is None else cu_seqlens_k.ctypes.data,
              s["window_left"], s["window_right"])
    assert rc == 0, "the reference does not know %s" % s
    return out


def tolerance(kern, q, k, v):
    """As tests/check.c: outputs are convex combinations of v rows, so errors
    scale with max|v|; a float score's rounding grows like sqrt(dk) * eps *
    dk * max|q| max|k| * scale."""
    dk, scale = kern.spec["dk"], kern.spec["scale"]
    qmax = float(np.abs(q).max()) if q.size else 0.0
    kmax = float(np.abs(k).max()) if k.size else 0.0
    vmax = float(np.abs(v).max()) if v.size else 0.0
    return vmax * (1e-5 + 4.0 * math.sqrt(dk) * 2.0 ** -24 * dk * qmax *
                   kmax * scale)


# Specs (mhagen flags as keywords) and the calls made on each: batch,
# seq_q, seq_kv, and how inputs are made.  Lengths just past a vector or a
# tile, a length of 1, scores near +100, fully masked rows.
CASES = [
    (dict(h=4, dk=16), [(2, 5, 7), (1, 1, 1), (3, 17, 33)]),
    (dict(h=4, kv_heads=2, dk=16, dv=8, mask="causal,padding"),
     [(3, 9, 9), (2, 4, 12), (1, 33, 17)]),
    (dict(h=2, dk=8, seq=16, mask="causal,bias", layout="bhsd", window=5,
          causal_align="top-left"), [(2, 16, 16)]),
    (dict(h=3, dk=24, target="scalar", mask="padding"), [(2, 6, 10)]),
    (dict(h=4, kv_heads=2, dk=8, mask="causal,padding", layout="sbhd"),
     [(3, 9, 9), (2, 5, 12)]),
    # windows by position, both sides, queries past and before the keys
    (dict(h=2, dk=8, mask="padding", window_left=3, window_right=2),
     [(2, 9, 9), (2, 4, 12), (1, 12, 5)]),
    (dict(h=2, dk=8, mask="causal", causal_align="top-left", window_left=2),
     [(2, 7, 4), (1, 3, 9)]),
]


def inputs(kern, batch, seq_q, seq_kv, rng, hot=False):
    shapes = kern.shapes(batch, seq_q, seq_kv)
    # hot: q.k * scale near 100, where exp overflows without the max
    amp = math.sqrt(100.0 / (kern.spec["dk"] * kern.spec["scale"])) if hot \
        else 1.0
    q = (rng.standard_normal(shapes[0]) * amp).astype(np.float32)
    k = (rng.standard_normal(shapes[1]) * amp).astype(np.float32)
    v = rng.uniform(-1, 1, shapes[2]).astype(np.float32)
    kv_len = bias = None
    if "padding" in kern.spec["mask"]:
        # a batch item with no key at all: its rows are zeros
        kv_len = np.array([(b * 5 + seq_kv // 2) % (seq_kv + 1)
                           for b in range(batch)], np.int32)
        kv_len[0] = 0
    if "bias" in kern.spec["mask"]:
        bias = rng.uniform(-2, 2, (seq_q, seq_kv)).astype(np.float32)
        bias[rng.uniform(size=bias.shape) < 0.125] = -np.inf
        bias[0, :] = -np.inf
    return q, k, v, kv_len, bias


class AgainstReference(unittest.TestCase):
    def test_cases(self):
        rng = np.random.default_rng(17)
        for spec, calls in CASES:
            kern = mhagen.kernel(**spec)
            for batch, seq_q, seq_kv in calls:
                for hot in (False, True):
                    with self.subTest(spec=spec, call=(batch, seq_q, seq_kv),
                                      hot=hot):
                        q, k, v, kv_len, bias = inputs(kern, batch, seq_q,
                                                       seq_kv, rng, hot)
                        out = kern(q, k, v, kv_len=kv_len, bias=bias)
                        ref = reference(kern, q, k, v, kv_len, bias)
                        self.assertEqual(out.shape, ref.shape)
                        self.assertTrue(np.isfinite(out).all())
                        err = float(np.abs(out - ref).max())
                        self.assertLessEqual(err, tolerance(kern, q, k, v),
                                             "max |out - ref|")
                        if kv_len is not None:
                            # batch item 0 sees no key: exactly zero
                            self.assertFalse(
                                (out[:, 0] if kern.spec["layout"] == "sbhd"
                                 else out[0]).any())

    def test_modifiers(self):
        """Kernels reading inputs beyond the nine (NAME_args only): ALiBi
        slopes of both signs, sink logits, a soft-cap; and their checks."""
        rng = np.random.default_rng(5)
        for spec in (dict(h=4, dk=16, alibi=True, sinks=True, softcap=20,
                          mask="causal"),
                     dict(h=6, kv_heads=3, dk=8, alibi=True, algo="rows",
                          mask="padding", kv_split=3)):
            kern = mhagen.kernel(**spec)
            h = kern.spec["h"]
            self.assertTrue(kern.spec["alibi_slopes"])
            slopes = np.array([0.3 * (-1) ** i for i in range(h)], np.float32)
            sinks = rng.uniform(-1, 1, h).astype(np.float32) \
                if kern.spec["sinks"] else None
            seq_q = kern.spec["seq_q"] or 9
            with self.subTest(spec=spec):
                q, k, v, kv_len, bias = inputs(kern, 2, seq_q, 13, rng)
                out = kern(q, k, v, kv_len=kv_len, alibi_slopes=slopes,
                           sinks=sinks)
                ref = reference(kern, q, k, v, kv_len, bias, slopes, sinks)
                err = float(np.abs(out - ref).max())
                self.assertLessEqual(err, tolerance(kern, q, k, v) + 1e-5)
                with self.assertRaisesRegex(ValueError, "^alibi_slopes: "
                                            "required"):
                    kern(q, k, v, kv_len=kv_len, sinks=sinks)
                with self.assertRaisesRegex(ValueError, r"^alibi_slopes: "
                                            r"shape \(3,\)"):
                    kern(q, k, v, kv_len=kv_len, sinks=sinks,
                         alibi_slopes=slopes[:3].copy())
        plain = mhagen.kernel(h=4, dk=16)
        q, k, v, _, _ = inputs(plain, 1, 2, 3, rng)
        with self.assertRaisesRegex(ValueError, "^sinks: the kernel reads "
                                    "none"):
            plain(q, k, v, sinks=np.zeros(4, np.float32))

    def test_kv_dtype(self):
        """Kernels with f16 and bf16 keys and values (--kv-dtype): k and v
        as numpy.float16, or as numpy.uint16 holding bfloat16 bits; the
        reference on the same stored values as floats (exact); the wrong
        dtype refused."""
        rng = np.random.default_rng(23)
        for spec in (dict(h=4, kv_heads=2, dk=20, kv_dtype="f16",
                          mask="causal,padding"),
                     dict(h=4, dk=16, seq=1, seq_kv=40, kv_dtype="bf16"),
                     dict(h=2, dk=9, kv_dtype="bf16", algo="rows",
                          mask="padding")):
            kern = mhagen.kernel(**spec)
            self.assertEqual(kern.spec["kv_dtype"], spec["kv_dtype"])
            seq_q = kern.spec["seq_q"] or 9
            seq_kv = kern.spec["seq_kv"] or 13
            with self.subTest(spec=spec):
                q, k, v, kv_len, bias = inputs(kern, 2, seq_q, seq_kv, rng)
                if spec["kv_dtype"] == "f16":
                    ks, vs = k.astype(np.float16), v.astype(np.float16)
                    kf, vf = ks.astype(np.float32), vs.astype(np.float32)
                else:
                    # bfloat16 bits: the high half, rounded to nearest even
                    def bf16(x):
                        u = x.view(np.uint32).astype(np.uint64)
                        u = (u + 0x7fff + ((u >> 16) & 1)) >> 16
                        return u.astype(np.uint16)
                    ks, vs = bf16(k), bf16(v)
                    kf = (ks.astype(np.uint32) << 16).view(np.float32)
                    vf = (vs.astype(np.uint32) << 16).view(np.float32)
                out = kern(q, ks, vs, kv_len=kv_len)
                ref = reference(kern, q, kf, vf, kv_len)
                self.assertLessEqual(float(np.abs(out - ref).max()),
                                     tolerance(kern, q, kf, vf))
                want = "float16" if spec["kv_dtype"] == "f16" else "uint16"
                with self.assertRaisesRegex(TypeError, "^k: dtype float32, "
                                            "the kernel takes " + want):
                    kern(q, k, vs, kv_len=kv_len)

    def test_dtype(self):
        """Kernels with q, k, v and out in f16 or bf16 (--dtype), and with
        --kv-dtype f32 beside it: q and out as numpy.float16, or numpy.uint16
        holding bfloat16 bits; out allocated in that dtype; the reference on
        the stored values, out within tolerance plus an ulp of its type;
        float32 q and out refused."""
        rng = np.random.default_rng(31)

        def bf16(x):
            u = x.view(np.uint32).astype(np.uint64)
            return ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)

        def stored(x, dt):
            if dt == "f32":
                return x, x
            if dt == "f16":
                h = x.astype(np.float16)
                return h, h.astype(np.float32)
            b = bf16(x)
            return b, (b.astype(np.uint32) << 16).view(np.float32)

        for spec in (dict(h=4, kv_heads=2, dk=20, dtype="f16",
                          mask="causal,padding"),
                     dict(h=4, dk=16, seq=1, seq_kv=40, dtype="bf16",
                          algo="rows", mask="padding"),
                     dict(h=2, dk=24, dtype="bf16", kv_dtype="f32",
                          layout="bhsd", mask="causal")):
            kern = mhagen.kernel(**spec)
            dt = spec["dtype"]
            self.assertEqual(kern.spec["dtype"], dt)
            self.assertEqual(kern.spec["kv_dtype"], spec.get("kv_dtype", dt))
            seq_q = kern.spec["seq_q"] or 9
            seq_kv = kern.spec["seq_kv"] or 13
            with self.subTest(spec=spec):
                q, k, v, kv_len, bias = inputs(kern, 2, seq_q, seq_kv, rng)
                qs, qf = stored(q, dt)
                ks, kf = stored(k, kern.spec["kv_dtype"])
                vs, vf = stored(v, kern.spec["kv_dtype"])
                out = kern(qs, ks, vs, kv_len=kv_len)
                want = np.float16 if dt == "f16" else np.uint16
                self.assertEqual(out.dtype, want)
                of = out.astype(np.float32) if dt == "f16" else \
                    (out.astype(np.uint32) << 16).view(np.float32)
                ref = reference(kern, qf, kf, vf, kv_len)
                ulp = 2.0 ** (-10 if dt == "f16" else -7)
                self.assertLessEqual(
                    float((np.abs(of - ref) - ulp * np.abs(ref)).max()),
                    tolerance(kern, qf, kf, vf))
                name = np.dtype(want).name
                with self.assertRaisesRegex(TypeError, "^q: dtype float32, "
                                            "the kernel takes " + name):
                    kern(q, ks, vs, kv_len=kv_len)
                with self.assertRaisesRegex(TypeError, "^out: dtype float32, "
                                            "the kernel takes " + name):
                    kern(qs, ks, vs, kv_len=kv_len,
                         out=np.empty(of.shape, np.float32))

    def test_q8(self):
        """Kernels with keys and values in ggml's q8_0 blocks (--kv-dtype
        q8): k and v as mhagen.Q8_0 arrays from mhagen.quantize_q8_0 (as
        ggml quantizes: the block's largest magnitude is 127 steps, halves
        away from zero); the reference on the dequantized values; float
        arrays and a wrong shape refused."""
        x = np.arange(-16, 16, dtype=np.float32) / 8  # max |x| 2 = 127 d
        x[5] = np.float32(1) / np.float32(127)  # half a step: away from 0
        b = mhagen.quantize_q8_0(x)
        self.assertEqual(b.shape, (1,))
        self.assertEqual(b.dtype.itemsize, 34)
        self.assertEqual(int(b["d"][0]),
                         int(np.float16(np.float32(2) / 127).view(np.uint16)))
        self.assertEqual(int(b["qs"][0][0]), -127)
        self.assertEqual(int(b["qs"][0][5]), 1)
        self.assertEqual(int(mhagen.quantize_q8_0(np.zeros(32))["d"][0]), 0)
        y = x.copy()
        y[3] = np.nan
        self.assertTrue(np.isnan(mhagen.dequantize_q8_0(
            mhagen.quantize_q8_0(y))).all())
        rng = np.random.default_rng(29)
        for spec in (dict(h=4, kv_heads=2, dk=64, dv=32, kv_dtype="q8",
                          mask="causal,padding"),
                     dict(h=4, dk=32, seq=1, seq_kv=40, kv_dtype="q8",
                          algo="rows", mask="padding"),
                     dict(h=2, dk=32, kv_dtype="q8", layout="sbhd",
                          mask="causal"),
                     dict(h=4, kv_heads=2, dk=32, kv_dtype="q8",
                          varlen="packed", mask="causal")):
            kern = mhagen.kernel(**spec)
            seq_q = kern.spec["seq_q"] or 9
            seq_kv = kern.spec["seq_kv"] or 13
            with self.subTest(spec=spec):
                if kern.spec["varlen"] == "packed":
                    cq = np.array([0, 3, 3, 10], np.int32)
                    ck = np.array([0, 5, 9, 20], np.int32)
                    q = rng.standard_normal((10, 4, 32)).astype(np.float32)
                    k = rng.standard_normal((20, 2, 32)).astype(np.float32)
                    v = rng.uniform(-1, 1, (20, 2, 32)).astype(np.float32)
                    kq, vq = mhagen.quantize_q8_0(k), mhagen.quantize_q8_0(v)
                    self.assertEqual(kq.shape, (20, 2, 1))
                    out = kern(q, kq, vq, cu_seqlens_q=cq, cu_seqlens_k=ck)
                    kf = mhagen.dequantize_q8_0(kq)
                    vf = mhagen.dequantize_q8_0(vq)
                    ref = reference(kern, q, kf, vf, cu_seqlens_q=cq,
                                    cu_seqlens_k=ck)
                    self.assertLessEqual(float(np.abs(out - ref).max()),
                                         tolerance(kern, q, kf, vf))
                    with self.assertRaisesRegex(ValueError, r"^k: shape "
                                                r".*dk / 32\)"):
                        kern(q, kq[..., :0].copy(), vq, cu_seqlens_q=cq,
                             cu_seqlens_k=ck)
                    continue
                q, _, _, kv_len, _ = inputs(kern, 2, seq_q, seq_kv, rng)
                # shapes() gives k's and v's in blocks: 32 floats each
                ks, vs = kern.shapes(2, seq_q, seq_kv)[1:3]
                k = rng.standard_normal(ks[:-1] + (ks[-1] * 32,))
                v = rng.uniform(-1, 1, vs[:-1] + (vs[-1] * 32,))
                k, v = k.astype(np.float32), v.astype(np.float32)
                kq, vq = mhagen.quantize_q8_0(k), mhagen.quantize_q8_0(v)
                kf, vf = mhagen.dequantize_q8_0(kq), mhagen.dequantize_q8_0(vq)
                # the quantization's error: at most half a step of the block
                self.assertLessEqual(float(np.abs(kf - k).max()),
                                     0.51 / 127 * float(np.abs(k).max()))
                out = kern(q, kq, vq, kv_len=kv_len)
                ref = reference(kern, q, kf, vf, kv_len)
                self.assertLessEqual(float(np.abs(out - ref).max()),
                                     tolerance(kern, q, kf, vf))
                with self.assertRaisesRegex(TypeError, "^k: dtype float32, "
                                            "the kernel takes q8_0 blocks"):
                    kern(q, k, vq, kv_len=kv_len)
                with self.assertRaisesRegex(ValueError,
                                            r"^v: shape .*dv / 32\)"):
                    kern(q, kq, vq[..., :0].copy(), kv_len=kv_len)

    def test_masks(self):
        """Boolean masks (NumPy bool or uint8), key masks with holes and
        left padding, a bias and boolean mask with batch and head
        dimensions, as HuggingFace's [B,H,L,S] masks; and their checks."""
        rng = np.random.default_rng(11)
        kern = mhagen.kernel(h=3, dk=16, mask="causal,bias,bool,keys",
                             mask_dims="b,h")
        self.assertEqual(kern.spec["mask_dims"], ("b", "h"))
        batch, seq_q, seq_kv = 2, 9, 21
        q, k, v, _, bias = inputs(kern, batch, seq_q, seq_kv, rng)
        bias = rng.uniform(-2, 2, (batch, 3, seq_q, seq_kv)).astype(
            np.float32)
        keep = rng.uniform(size=bias.shape) < 0.75
        keep[1, 2, 4, :] = False  # a row that sees no key: zeros
        keys = np.ones((batch, seq_kv), np.bool_)
        keys[0, :5] = False  # left padding
        keys[1, 3::4] = False  # holes
        for bm, km in ((keep, keys), (keep.astype(np.uint8) * 7,
                                      keys.astype(np.uint8))):
            out = kern(q, k, v, bias=bias, bool_mask=bm, key_mask=km)
            ref = reference(kern, q, k, v, bias=bias,
                            bool_mask=np.ascontiguousarray(bm != 0, np.uint8),
                            key_mask=np.ascontiguousarray(km != 0, np.uint8))
            self.assertLessEqual(float(np.abs(out - ref).max()),
                                 tolerance(kern, q, k, v))
            self.assertFalse(out[1, 4, 2].any())
        with self.assertRaisesRegex(ValueError, r"^bias: shape \(9, 21\), "
                                    r"expected \(batch, h, seq_q, seq_kv\)"):
            kern(q, k, v, bias=bias[0, 0].copy(), bool_mask=keep,
                 key_mask=keys)
        with self.assertRaisesRegex(ValueError, "^key_mask: required"):
            kern(q, k, v, bias=bias, bool_mask=keep)
        with self.assertRaisesRegex(TypeError, "^bool_mask: dtype int32"):
            kern(q, k, v, bias=bias, bool_mask=keep.astype(np.int32),
                 key_mask=keys)
        plain = mhagen.kernel(h=3, dk=16)
        with self.assertRaisesRegex(ValueError, "^key_mask: the kernel has "
                                    "no key mask"):
            plain(q, k, v, key_mask=keys)

    def test_varlen(self):
        """Variable-length batches, FlashAttention's semantics: padded
        buffers with q_len (or None) and kv_len, packed sequences with
        cu_seqlens; lengths 0 and full, fewer keys than queries (bottom-right:
        the early rows see no key); rows past a sequence's queries keep what
        out held; and their checks."""
        rng = np.random.default_rng(23)
        q_lens = np.array([9, 0, 9, 4, 1], np.int32)
        kv_lens = np.array([13, 5, 3, 0, 13], np.int32)
        kern = mhagen.kernel(h=4, kv_heads=2, dk=16, mask="causal",
                             varlen="padded", window=6, alibi=True)
        self.assertEqual(kern.spec["varlen"], "padded")
        slopes = np.array([0.3, -0.2, 0.1, 0.25], np.float32)
        q, k, v, _, _ = inputs(kern, 5, 9, 13, rng, hot=True)
        for ql in (q_lens, None):
            out = np.full(kern.shapes(5, 9, 13)[3], 7.0, np.float32)
            kern(q, k, v, kv_len=kv_lens, q_len=ql, alibi_slopes=slopes,
                 out=out)
            ref = reference(kern, q, k, v, kv_len=kv_lens, q_len=ql,
                            alibi_slopes=slopes)
            for b in range(5):
                n = 9 if ql is None else int(ql[b])
                self.assertLessEqual(float(np.abs(out[b, :n] -
                                                  ref[b, :n]).max(initial=0)),
                                     tolerance(kern, q, k, v))
                self.assertTrue((out[b, n:] == 7.0).all(), "rows past q_len")
            # sequence 2: 9 queries, 3 keys: its first 6 rows see none
            self.assertFalse(out[2, :6].any())
            self.assertFalse(out[3].any() if ql is None else out[3, :4].any())
        with self.assertRaisesRegex(ValueError, "^kv_len: required"):
            kern(q, k, v, q_len=q_lens, alibi_slopes=slopes)
        with self.assertRaisesRegex(ValueError, r"^q_len: shape \(4,\)"):
            kern(q, k, v, kv_len=kv_lens, q_len=q_lens[:4].copy(),
                 alibi_slopes=slopes)
        packed = mhagen.kernel(h=3, dk=8, mask="causal,keys", varlen="packed",
                               algo="rows", kv_split=2)
        cu_q = np.concatenate(([0], np.cumsum(q_lens))).astype(np.int32)
        cu_k = np.concatenate(([0], np.cumsum(kv_lens))).astype(np.int32)
        q = rng.standard_normal((int(cu_q[-1]), 3, 8)).astype(np.float32)
        k = rng.standard_normal((int(cu_k[-1]), 3, 8)).astype(np.float32)
        v = rng.uniform(-1, 1, (int(cu_k[-1]), 3, 8)).astype(np.float32)
        keys = rng.uniform(size=(5, 13)) < 0.8
        out = packed(q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
                     key_mask=keys)
        ref = reference(packed, q, k, v, cu_seqlens_q=cu_q,
                        cu_seqlens_k=cu_k,
                        key_mask=np.ascontiguousarray(keys, np.uint8))
        self.assertEqual(out.shape, (int(cu_q[-1]), 3, 8))
        self.assertLessEqual(float(np.abs(out - ref).max()),
                             tolerance(packed, q, k, v))
        with self.assertRaisesRegex(ValueError, "^cu_seqlens_k: required"):
            packed(q, k, v, cu_seqlens_q=cu_q, key_mask=keys)
        with self.assertRaisesRegex(ValueError, "^cu_seqlens_q: must rise"):
            packed(q, k, v, cu_seqlens_q=cu_q[::-1].copy(),
                   cu_seqlens_k=cu_k, key_mask=keys)
        with self.assertRaisesRegex(ValueError, "^q: expected 3 dimensions"):
            packed(q[None], k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
                   key_mask=keys)
        plain = mhagen.kernel(h=3, dk=8)
        with self.assertRaisesRegex(ValueError, "^cu_seqlens_q: the kernel "
                                    "has no packed sequences"):
            plain(q[None], k[None], v[None], cu_seqlens_q=cu_q)
        with self.assertRaisesRegex(ValueError, "^q_len: the kernel has no "
                                    "per-sequence"):
            plain(q[None], k[None], v[None], q_len=q_lens)

    def test_out_argument(self):
        kern = mhagen.kernel(h=2, dk=8)
        rng = np.random.default_rng(3)
        q, k, v, _, _ = inputs(kern, 2, 3, 4, rng)
        out = np.full(kern.shapes(2, 3, 4)[3], np.nan, np.float32)
        got = kern(q, k, v, out=out)
        self.assertIs(got, out)
        np.testing.assert_allclose(out, reference(kern, q, k, v), atol=1e-5)

    def test_spec_from_file_and_description(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "attn.spec")
            with open(path, "w") as f:
                f.write("h = 6\ndk = 8\nkv-heads = 3\nseq = 4\nseq-kv = 9\n")
            kern = mhagen.kernel(args=["--spec", path], target="scalar")
        s = kern.spec
        self.assertEqual((s["h"], s["kv_heads"], s["dk"], s["dv"]),
                         (6, 3, 8, 8))
        self.assertEqual((s["seq_q"], s["seq_kv"]), (4, 9))
        self.assertEqual(kern.name, "mha_f32_h6_kv3_dk8_q4_kv_s9__scalar")
        rng = np.random.default_rng(5)
        q, k, v, _, _ = inputs(kern, 1, 4, 9, rng)
        np.testing.assert_allclose(kern(q, k, v), reference(kern, q, k, v),
                                   atol=1e-5)


class Cache(unittest.TestCase):
    def test_reused_and_keyed(self):
        with tempfile.TemporaryDirectory() as d:
            a = mhagen.kernel(h=2, dk=8, cache=d)
            self.assertTrue(a.path.startswith(d + os.sep))
            self.assertTrue(os.path.basename(a.path).startswith(a.name + "-"))
            self.assertTrue(os.path.exists(a.path[:-3] + ".c"))
            mtime = os.stat(a.path).st_mtime_ns
            # in this process: the same object
            self.assertIs(mhagen.kernel(h=2, dk=8, cache=d), a)
            # as a new process would: generated again, not compiled again
            _kernel._loaded.clear()
            b = mhagen.kernel(h=2, dk=8, cache=d)
            self.assertIsNot(b, a)
            self.assertEqual(b.path, a.path)
            self.assertEqual(os.stat(b.path).st_mtime_ns, mtime)
            # other flags, another object file; another spec, another name
            c = mhagen.kernel(h=2, dk=8, cache=d, cflags="-O1")
            self.assertNotEqual(c.path, a.path)
            e = mhagen.kernel(h=2, dk=8, mask="causal", cache=d)
            self.assertNotEqual(e.name, a.name)
            files = sorted(f for f in os.listdir(d) if f.endswith(".so"))
            self.assertEqual(len(files), 3, files)

    def test_default_dir(self):
        env = dict(os.environ)
        try:
            os.environ.pop("MHAGEN_CACHE_DIR", None)
            os.environ["XDG_CACHE_HOME"] = "/somewhere"
            self.assertEqual(mhagen.cache_dir(), "/somewhere/mhagen")
            os.environ["MHAGEN_CACHE_DIR"] = "/elsewhere"
            self.assertEqual(mhagen.cache_dir(), "/elsewhere")
        finally:
            os.environ.clear()
            os.environ.update(env)


class Checks(unittest.TestCase):
    """Every argument a kernel refuses, with a message naming it."""

    @classmethod
    def setUpClass(cls):
        cls.plain = mhagen.kernel(h=2, dk=8)
        cls.pad = mhagen.kernel(h=2, dk=8, mask="padding,bias")
        cls.fixed = mhagen.kernel(h=2, dk=8, seq=4)
        rng = np.random.default_rng(9)
        cls.q, cls.k, cls.v, _, _ = inputs(cls.plain, 2, 4, 5, rng)

    def refused(self, exc, text, fn, *args, **kw):
        with self.assertRaises(exc) as cm:
            fn(*args, **kw)
        msg = str(cm.exception)
        self.assertIn(text, msg)
        self.assertNotIn("\n", msg)

    def test_dtype(self):
        self.refused(TypeError, "q: dtype float64, the kernel takes float32",
                     self.plain, self.q.astype(np.float64), self.k, self.v)
        self.refused(TypeError, "v: expected a numpy.ndarray, got list",
                     self.plain, self.q, self.k, self.v.tolist())

    def test_shape(self):
        self.refused(ValueError, "k: shape (2, 5, 2, 4), expected "
                     "(batch, seq_kv, kv_heads, dk) = (2, 5, 2, 8)",
                     self.plain, self.q, np.ascontiguousarray(self.k[..., :4]),
                     self.v)
        self.refused(ValueError, "v: shape (2, 4, 2, 8)", self.plain, self.q,
                     self.k, np.ascontiguousarray(self.v[:, :4]))
        self.refused(ValueError, "q: expected 4 dimensions", self.plain,
                     self.q[0], self.k, self.v)
        # batch and seq_q come from q, seq_kv from k; the others must agree
        self.refused(ValueError, "k: shape (2, 5, 2, 8), expected (batch, "
                     "seq_kv, kv_heads, dk) = (1, 5, 2, 8)", self.plain,
                     np.ascontiguousarray(self.q[:1]), self.k, self.v)
        self.refused(ValueError, "seq_q is 0", self.plain,
                     np.zeros((2, 0, 2, 8), np.float32), self.k, self.v)

    def test_fixed_length(self):
        self.refused(ValueError, "k: seq_kv is 5, but the kernel was "
                     "generated for --seq-kv 4", self.fixed, self.q, self.k,
                     self.v)

    def test_contiguity(self):
        q = np.zeros((2, 2, 4, 8), np.float32).transpose(0, 2, 1, 3)
        self.refused(ValueError, "q: not C-contiguous", self.plain, q,
                     self.k, self.v)

    def test_masks(self):
        kv_len = np.array([5, 3], np.int32)
        bias = np.zeros((4, 5), np.float32)
        self.refused(ValueError, "kv_len: required", self.pad, self.q,
                     self.k, self.v, bias=bias)
        self.refused(ValueError, "bias: required", self.pad, self.q, self.k,
                     self.v, kv_len=kv_len)
        self.refused(TypeError, "kv_len: dtype int64, the kernel takes int32",
                     self.pad, self.q, self.k, self.v,
                     kv_len=kv_len.astype(np.int64), bias=bias)
        self.refused(ValueError, "kv_len: shape (3,)", self.pad, self.q,
                     self.k, self.v, kv_len=np.zeros(3, np.int32), bias=bias)
        self.refused(ValueError, "bias: shape (5, 4)", self.pad, self.q,
                     self.k, self.v, kv_len=kv_len,
                     bias=np.zeros((5, 4), np.float32))
        self.refused(ValueError, "kv_len: the kernel has no padding mask",
                     self.plain, self.q, self.k, self.v, kv_len=kv_len)
        self.refused(ValueError, "bias: the kernel has no bias mask",
                     self.plain, self.q, self.k, self.v, bias=bias)

    def test_out(self):
        shape = self.plain.shapes(2, 4, 5)[3]
        self.refused(ValueError, "out: shape (2, 4, 2, 4)", self.plain,
                     self.q, self.k, self.v,
                     out=np.zeros((2, 4, 2, 4), np.float32))
        ro = np.zeros(shape, np.float32)
        ro.flags.writeable = False
        self.refused(ValueError, "out: read-only", self.plain, self.q,
                     self.k, self.v, out=ro)
        q = self.q.copy()
        self.refused(ValueError, "out: overlaps q", self.plain, q, self.k,
                     self.v, out=q)

    def test_empty_batch(self):
        q = np.zeros((0, 4, 2, 8), np.float32)
        k = np.zeros((0, 5, 2, 8), np.float32)
        out = self.plain(q, k, k)
        self.assertEqual(out.shape, (0, 4, 2, 8))

    def test_generation_errors(self):
        self.refused(mhagen.MhagenError, "mhagen: --h: 0 is out of range",
                     mhagen.kernel, h=0, dk=8)
        self.refused(mhagen.MhagenError, "mhagen: unknown flag '--heads'",
                     mhagen.kernel, heads=2, dk=8)
        self.refused(ValueError, "--emit is set by the package",
                     mhagen.kernel, h=2, dk=8, emit="name")
        env = dict(os.environ)
        try:
            os.environ.pop("MHAGEN", None)
            os.environ["PATH"] = "/nonexistent"
            self.refused(mhagen.MhagenError, "mhagen: the mhagen program is "
                         "not on PATH", mhagen.kernel, h=2, dk=8)
        finally:
            os.environ.clear()
            os.environ.update(env)
        self.refused(mhagen.MhagenError, "mhagen: cannot run mhagen",
                     mhagen.kernel, h=2, dk=8, mhagen="/nonexistent/mhagen")
        self.refused(mhagen.MhagenError, "the C compiler (no-such-cc-mhagen)",
                     mhagen.kernel, h=2, dk=9, cc="no-such-cc-mhagen")
        self.refused(ValueError, "packed=qkv: the package passes q, k and v "
                     "as separate arrays", mhagen.kernel, h=2, dk=8,
                     packed="qkv")


class Install(unittest.TestCase):
    def test_pip_install(self):
        """pip installs the package (python/, with its pyproject.toml) into
        a fresh environment (NumPy from the system's; no network), where it
        generates and calls a kernel."""
        with tempfile.TemporaryDirectory() as d:
            # from a copy: setuptools writes build/ and *.egg-info beside
            # the sources
            src = os.path.join(d, "src")
            shutil.copytree(os.path.join(REPO, "python"), src,
                            ignore=shutil.ignore_patterns(
                                "build", "*.egg-info", "__pycache__"))
            env_dir = os.path.join(d, "venv")
            subprocess.run([sys.executable, "-m", "venv",
                            "--system-site-packages", env_dir], check=True)
            py = os.path.join(env_dir, "bin", "python")
            p = subprocess.run([py, "-m", "pip", "install", "--quiet",
                                "--no-index", "--no-build-isolation",
                                "--no-deps", src],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT,
                               universal_newlines=True)
            self.assertEqual(p.returncode, 0, p.stdout)
            env = dict(os.environ)
            env.pop("PYTHONPATH", None)
            env["MHAGEN_CACHE_DIR"] = os.path.join(d, "cache")
            code = ("import mhagen, numpy as np\n"
                    "k = mhagen.kernel(h=1, dk=4)\n"
                    "x = np.ones((1, 2, 1, 4), np.float32)\n"
                    "print(mhagen.__file__)\n"
                    "print(k(x, x, x).sum())\n")
            p = subprocess.run([py, "-c", code], cwd=d, env=env,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT,
                               universal_newlines=True)
            self.assertEqual(p.returncode, 0, p.stdout)
            where, total = p.stdout.split()
            self.assertTrue(where.startswith(env_dir), where)
            self.assertAlmostEqual(float(total), 8.0, places=5)


if __name__ == "__main__":
    unittest.main()
