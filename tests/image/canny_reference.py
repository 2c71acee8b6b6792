#!/usr/bin/python3
"""An independent numpy reimplementation of the reference program's Canny preprocessor
(stable-diffusion.cpp's preprocess_canny), for tests/image/canny_test.cpp.

usage: canny_reference.py IN.ppm OUT.ppm HIGH LOW WEAK STRONG INVERSE(0|1)
IN and OUT are binary PPM (P6) images.
"""
import sys

import numpy as np


def read_ppm(path):
    data = open(path, "rb").read()
    parts = data.split(maxsplit=4)
    assert parts[0] == b"P6" and parts[3] == b"255"
    w, h = int(parts[1]), int(parts[2])
    return np.frombuffer(parts[4][: w * h * 3], dtype=np.uint8).reshape(h, w, 3)


def write_ppm(path, img):
    h, w, _ = img.shape
    with open(path, "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (w, h))
        f.write(img.astype(np.uint8).tobytes())


def conv_f16(img, kernel):
    """ggml conv_2d with an f16 kernel: zero padding k//2, f16 operands, sums in double."""
    k = kernel.shape[0]
    pad = k // 2
    x = np.pad(img.astype(np.float16).astype(np.float64), pad)
    kk = kernel.astype(np.float32).astype(np.float16).astype(np.float64)
    h, w = img.shape
    out = np.zeros((h, w), dtype=np.float64)
    for ky in range(k):
        for kx in range(k):
            out += x[ky:ky + h, kx:kx + w] * kk[ky, kx]
    return out.astype(np.float32)


def canny(rgb, high, low, weak, strong, inverse):
    f = rgb.astype(np.float32) / np.float32(255)
    gray = (np.float32(0.2989) * f[..., 0] + np.float32(0.5870) * f[..., 1]) + np.float32(0.1140) * f[..., 2]
    sigma = np.float32(1.4)
    c = np.arange(5, dtype=np.float32) - 2
    g2 = c[:, None] ** 2 + c[None, :] ** 2
    normal = np.float32(1) / (np.float32(2) * np.float32(np.pi) * (sigma * sigma))
    gauss = np.exp(-(g2 / (np.float32(2) * sigma * sigma))).astype(np.float32) * normal
    gray = conv_f16(gray, gauss)
    dx = conv_f16(gray, np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=np.float32))
    dy = conv_f16(gray, np.array([[1, 2, 1], [0, 0, 0], [-1, -2, -1]], dtype=np.float32))
    mag = np.sqrt(dx * dx + dy * dy).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        mag = mag * (np.float32(1) / mag.max())
    angle = np.arctan2(dy, dx).astype(np.float32) * np.float32(180) / np.float32(np.pi)
    angle = np.where(angle < 0, angle + np.float32(180), angle)
    h, w = gray.shape
    out = gray.copy()  # the one-pixel border keeps the blurred grey
    ys, xs = np.mgrid[1:h - 1, 1:w - 1]
    a = angle[1:-1, 1:-1]
    cur = mag[1:-1, 1:-1]
    # The reference's tests ("0 >= angle", "157.5 >= angle" ...) send every angle up to
    # 157.5 to the vertical neighbours and the rest to a comparison with 1.
    vertical = a <= 157.5
    q = np.where(vertical, mag[ys + 1, xs], np.float32(1))
    r = np.where(vertical, mag[ys - 1, xs], np.float32(1))
    with np.errstate(invalid="ignore"):
        out[1:-1, 1:-1] = np.where((cur >= q) & (cur >= r), cur, np.float32(0))
    top = np.nanmax(out) if not np.all(np.isnan(out)) else -np.inf
    ht = np.float32(top) * np.float32(high)
    lt = ht * np.float32(low)
    with np.errstate(invalid="ignore"):
        is_strong = out >= ht
        is_weak = ~is_strong & (out <= ht) & (out >= lt)
    out = np.where(is_strong, np.float32(strong), np.where(is_weak, np.float32(weak), out))
    keep = np.zeros_like(out, dtype=bool)
    keep[3:h - 2, 3:w - 2] = True
    out = np.where(keep, out, np.float32(0))
    for y in range(1, h - 1):  # one raster pass, in place
        for x in range(1, w - 1):
            if out[y, x] != np.float32(weak):
                continue
            n = (out[y - 1, x + 1], out[y, x + 1], out[y - 1, x], out[y + 1, x], out[y - 1, x - 1], out[y, x - 1])
            out[y, x] = strong if any(v == np.float32(strong) for v in n) else 0
    v = (np.float32(1) - out) if inverse else out
    v = np.nan_to_num(np.clip(v, 0, 1), nan=0.0)
    byte = (v.astype(np.float32) * np.float32(255)).astype(np.uint8)
    return np.repeat(byte[..., None], 3, axis=2)


if __name__ == "__main__":
    args = sys.argv
    img = read_ppm(args[1])
    out = canny(img, float(args[3]), float(args[4]), float(args[5]), float(args[6]), args[7] == "1")
    write_ppm(args[2], out)
