/*
 * outpass.h - the output pass of the fused tail (output.c) for uint8
 * pixels to float32: flip, ToTensor + Normalize and layout in one pass
 * that writes every element of the ring slot once, in order. Generic C
 * and vector kernels (x86-64 SSE4.1 and AVX2, aarch64 NEON) chosen through
 * simd.h.
 *
 * Numerics: each element is float32(v) / 255 then (u - mean[c]) / std[c],
 * two correctly rounded IEEE operations per step in float32 (a division,
 * a subtraction, a division; no FMA can form), so every path gives the
 * same bits, and the bits torchvision's ToTensor + Normalize give.
 * ToTensor alone is mean 0, std 1 (u - 0 and u / 1 are exact).
 *
 * Thread safety: works only on its arguments.
 */
#ifndef TS_OUTPASS_H
#define TS_OUTPASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* src: h rows of w pixels of C (1..4) uint8 channels, rows sstride bytes
 * apart. dst: w * h * C floats, NCHW planes when nchw, else NHWC. hflip
 * and vflip mirror the image on the way (the slot holds the flipped
 * image). mean and std have C entries. */
void ts_outpass_u8_f32(const uint8_t *src, size_t sstride, int w, int h, int C,
		       bool hflip, bool vflip, bool nchw, const float *mean,
		       const float *std, float *dst);

#endif
