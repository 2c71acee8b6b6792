#!/usr/bin/env python3
"""An independent Wan 2.1 VAE in numpy (float64), written from Wan's wan/modules/vae.py
(CausalConv3d, RMS_norm, Resample, ResidualBlock, AttentionBlock, Encoder3d, Decoder3d and
WanVAE_'s chunked encode / decode with its feature cache), for tests/models/wan_vae_test.cpp.

Usage: wan_vae_reference.py MODEL.safetensors INPUTS.safetensors OUT.f32
MODEL holds the VAE's weights (f32, Wan's names: encoder.*, decoder.*, conv1.*, conv2.*);
INPUTS holds either "video" [C=3, T, H, W] (encoded: OUT receives the latent mean mu
[z, 1 + (T - 1) / 4, H / 8, W / 8]) or "latent" [z, T, h, w] (decoded: OUT receives
[3, 1 + 4 (T - 1), 8 h, 8 w]), as raw little-endian f32.

Layout: [C, T, H, W] throughout (one video, Wan's batch of one)."""
import sys

import numpy as np

from flux_reference import load, silu  # f32 safetensors reader; x * sigmoid(x)

CACHE_T = 2


def conv3d(x, w, b, stride=(1, 1, 1)):
    """Valid 3-D convolution of x [I, T, H, W] with w [O, I, kt, kh, kw]."""
    O, I, kt, kh, kw = w.shape
    st, sh, sw = stride
    T = (x.shape[1] - kt) // st + 1
    H = (x.shape[2] - kh) // sh + 1
    W = (x.shape[3] - kw) // sw + 1
    out = np.zeros((O, T, H, W))
    for a in range(kt):
        for c in range(kh):
            for d in range(kw):
                patch = x[:, a:a + st * (T - 1) + 1:st, c:c + sh * (H - 1) + 1:sh,
                          d:d + sw * (W - 1) + 1:sw]
                out += np.einsum("oi,ithw->othw", w[:, :, a, c, d], patch)
    if b is not None:
        out += b[:, None, None, None]
    return out


def causal_conv3d(p, name, x, padding, cache=None, stride=(1, 1, 1)):
    """Wan's CausalConv3d: all time padding in front (2 * padding[0]), the cached frames of the
    previous chunk taking the place of that much of it; spatial padding on both sides."""
    pt, ph, pw = padding
    front = 2 * pt
    if cache is not None and front > 0:
        x = np.concatenate([cache, x], axis=1)
        front -= cache.shape[1]
    x = np.pad(x, ((0, 0), (front, 0), (ph, ph), (pw, pw)))
    return conv3d(x, p[name + ".weight"], p.get(name + ".bias"), stride)


def rms_norm(p, name, x):
    """F.normalize over channels, times sqrt(C) and gamma."""
    norm = np.sqrt((x ** 2).sum(axis=0, keepdims=True))
    gamma = p[name + ".gamma"].reshape(-1)[:, None, None, None]
    return x / np.maximum(norm, 1e-12) * np.sqrt(x.shape[0]) * gamma


class Cache:
    """feat_cache / feat_idx: one slot per cached convolution, walked in call order."""

    def __init__(self):
        self.slots = {}
        self.idx = 0

    def conv(self, p, name, x, padding):
        i = self.idx
        self.idx += 1
        prev = self.slots.get(i)
        cache_x = x[:, -CACHE_T:]
        if cache_x.shape[1] < 2 and prev is not None:
            cache_x = np.concatenate([prev[:, -1:], cache_x], axis=1)
        out = causal_conv3d(p, name, x, padding, prev)
        self.slots[i] = cache_x
        return out


def conv2d(x, w, b, stride=1, pad=0):
    """Per frame: x [I, T, H, W], w [O, I, k, k]."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    return conv3d(x, w[:, :, None], b, (1, stride, stride))


def residual_block(p, name, x, cache):
    h = x
    if name + ".shortcut.weight" in p:
        h = causal_conv3d(p, name + ".shortcut", x, (0, 0, 0))
    x = silu(rms_norm(p, name + ".residual.0", x))
    x = cache.conv(p, name + ".residual.2", x, (1, 1, 1))
    x = silu(rms_norm(p, name + ".residual.3", x))
    x = cache.conv(p, name + ".residual.6", x, (1, 1, 1))
    return x + h


def attention_block(p, name, x):
    identity = x
    x = rms_norm(p, name + ".norm", x)
    C, T, H, W = x.shape
    qkv = conv2d(x, p[name + ".to_qkv.weight"], p[name + ".to_qkv.bias"])
    out = np.zeros_like(x)
    for t in range(T):
        q = qkv[0:C, t].reshape(C, H * W).T
        k = qkv[C:2 * C, t].reshape(C, H * W).T
        v = qkv[2 * C:, t].reshape(C, H * W).T
        s = q @ k.T / np.sqrt(C)
        s = np.exp(s - s.max(axis=1, keepdims=True))
        s /= s.sum(axis=1, keepdims=True)
        out[:, t] = (s @ v).T.reshape(C, H, W)
    out = conv2d(out, p[name + ".proj.weight"], p[name + ".proj.bias"])
    return out + identity


def upsample_nearest(x):
    return x.repeat(2, axis=2).repeat(2, axis=3)


def resample(p, name, x, mode, cache, chunk):
    if mode == "upsample3d":
        i = cache.idx
        cache.idx += 1
        prev = cache.slots.get(i)
        if prev is None:
            cache.slots[i] = "Rep"
        else:
            cache_x = x[:, -CACHE_T:]
            if cache_x.shape[1] < 2 and not isinstance(prev, str):
                cache_x = np.concatenate([prev[:, -1:], cache_x], axis=1)
            if cache_x.shape[1] < 2 and isinstance(prev, str):
                cache_x = np.concatenate([np.zeros_like(cache_x), cache_x], axis=1)
            if isinstance(prev, str):
                x = causal_conv3d(p, name + ".time_conv", x, (1, 0, 0))
            else:
                x = causal_conv3d(p, name + ".time_conv", x, (1, 0, 0), prev)
            cache.slots[i] = cache_x
            C2, T, H, W = x.shape
            x = x.reshape(2, C2 // 2, T, H, W).transpose(1, 2, 0, 3, 4).reshape(C2 // 2, 2 * T, H, W)
    w, b = p[name + ".resample.1.weight"], p[name + ".resample.1.bias"]
    if mode.startswith("upsample"):
        x = conv2d(upsample_nearest(x), w, b, 1, 1)
    else:
        x = np.pad(x, ((0, 0), (0, 0), (0, 1), (0, 1)))
        x = conv2d(x, w, b, 2, 0)
    if mode == "downsample3d":
        i = cache.idx
        cache.idx += 1
        prev = cache.slots.get(i)
        if prev is None:
            cache.slots[i] = x.copy()
        else:
            cache_x = x[:, -1:].copy()
            x = causal_conv3d(p, name + ".time_conv", np.concatenate([prev[:, -1:], x], axis=1),
                              (0, 0, 0), None, (2, 1, 1))
            cache.slots[i] = cache_x
    return x


def encoder(p, x, cache, chunk):
    dim = p["encoder.conv1.weight"].shape[0]
    mult = [1, 2, 4, 4]
    dims = [dim] + [dim * m for m in mult]
    temporal = [False, True, True]
    x = cache.conv(p, "encoder.conv1", x, (1, 1, 1))
    index = 0
    for i in range(4):
        for _ in range(2):
            x = residual_block(p, "encoder.downsamples.%d" % index, x, cache)
            index += 1
        if i != 3:
            mode = "downsample3d" if temporal[i] else "downsample2d"
            x = resample(p, "encoder.downsamples.%d" % index, x, mode, cache, chunk)
            index += 1
    x = residual_block(p, "encoder.middle.0", x, cache)
    x = attention_block(p, "encoder.middle.1", x)
    x = residual_block(p, "encoder.middle.2", x, cache)
    x = silu(rms_norm(p, "encoder.head.0", x))
    return cache.conv(p, "encoder.head.2", x, (1, 1, 1))


def decoder(p, x, cache, chunk):
    temporal = [True, True, False]
    x = cache.conv(p, "decoder.conv1", x, (1, 1, 1))
    x = residual_block(p, "decoder.middle.0", x, cache)
    x = attention_block(p, "decoder.middle.1", x)
    x = residual_block(p, "decoder.middle.2", x, cache)
    index = 0
    for i in range(4):
        for _ in range(3):
            x = residual_block(p, "decoder.upsamples.%d" % index, x, cache)
            index += 1
        if i != 3:
            mode = "upsample3d" if temporal[i] else "upsample2d"
            x = resample(p, "decoder.upsamples.%d" % index, x, mode, cache, chunk)
            index += 1
    x = silu(rms_norm(p, "decoder.head.0", x))
    return cache.conv(p, "decoder.head.2", x, (1, 1, 1))


def encode(p, video, encoder=encoder):
    """WanVAE_.encode: 1 + 4 + 4 ... frames a chunk through `encoder`, then conv1's mean."""
    cache = Cache()
    T = video.shape[1]
    outs = []
    for i in range(1 + (T - 1) // 4):
        cache.idx = 0
        chunk = video[:, :1] if i == 0 else video[:, 1 + 4 * (i - 1):1 + 4 * i]
        outs.append(encoder(p, chunk, cache, i))
    out = causal_conv3d(p, "conv1", np.concatenate(outs, axis=1), (0, 0, 0))
    return out[:out.shape[0] // 2]


def decode(p, z, decoder=decoder):
    """WanVAE_.decode: conv2, then one latent frame a chunk through `decoder`."""
    cache = Cache()
    x = causal_conv3d(p, "conv2", z, (0, 0, 0))
    outs = []
    for i in range(z.shape[1]):
        cache.idx = 0
        outs.append(decoder(p, x[:, i:i + 1], cache, i))
    return np.concatenate(outs, axis=1)


def main():
    p = load(sys.argv[1])
    inputs = load(sys.argv[2])
    if "video" in inputs:
        out = encode(p, inputs["video"])
    else:
        out = decode(p, inputs["latent"])
    out.astype("<f4").tofile(sys.argv[3])


if __name__ == "__main__":
    main()
