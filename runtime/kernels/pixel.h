/*
 * pixel.h - the uint8 row kernels behind the colour and filter families'
 * PIL arithmetic (color.c, augment.c's ImageEnhance blends, filter.c's
 * sharpness), the RGB flip and the nearest affine's sampling
 * (geometry.c): a generic C path, the reference, and SSE4.1/AVX2 (x86-64)
 * and NEON (aarch64) rows chosen by simd.h's instruction set
 * (TSRUN_SIMD=generic forces the C path). Every path gives the same
 * bytes: the vector rows do the C path's float operations lane for lane,
 * in its order, never fused (tests/test-pixel.c compares them on every
 * instruction set this CPU runs).
 *
 * A row is n bytes, channels interleaved; the kernels work in place
 * unless their comment names an output.
 * Thread safety: all are reentrant.
 */
#ifndef TS_PIXEL_H
#define TS_PIXEL_H

#include <stddef.h>
#include <stdint.h>

/* PIL's ImagingBlend of one uint8 value: a + alpha * (b - a) in float,
 * truncated, clipped only when extrapolating (alpha outside [0, 1]; inside
 * it the value cannot leave [0, 255], so clipping always is the same). */
static inline uint8_t ts_px_blend1(int a, int b, float alpha)
{
#if defined(__FP_FAST_FMAF)
	/* PIL rounds the product before the sum (its x86 build has no FMA):
	 * where the compiler would fuse them (aarch64), the product is
	 * stored first. */
	volatile float p = alpha * (float)(b - a);
#else
	float p = alpha * (float)(b - a);
#endif
	float t = (float)a + p;
	if (alpha >= 0.0f && alpha <= 1.0f)
		return (uint8_t)t;
	if (t <= 0.0f)
		return 0;
	if (t >= 255.0f)
		return 255;
	return (uint8_t)t;
}

/* r[i] = blend(a, r[i], alpha): ImageEnhance against a constant image
 * (Brightness: 0, Contrast: the mean). */
void ts_px_blend_const(uint8_t *r, size_t n, int a, float alpha);

/* r[i] = blend(a[i], r[i], alpha): ImageEnhance against a degenerate
 * image (Color: the gray, Sharpness: the smoothed). */
void ts_px_blend_row(uint8_t *r, const uint8_t *a, size_t n, float alpha);

/* r[i] = (r[i] & and_mask) ^ xor_mask: posterize (and = the kept bits),
 * invert (xor = 0xff). */
void ts_px_mask(uint8_t *r, size_t n, uint8_t and_mask, uint8_t xor_mask);

/* r[i] = r[i] >= t ? 255 - r[i] : r[i] (t in 0..256): ImageOps.solarize. */
void ts_px_solarize(uint8_t *r, size_t n, int t);

/* PIL's SMOOTH-like sharpness kernel ((1 1 1)(1 5 1)(1 1 1) / 13) of one
 * row: d[j] for j in [0, m) from the rows up, mid, dn (each pointing at
 * the same element as d, with C bytes between neighbours: p[j - C] and
 * p[j + C] are read), the sum 0.5 + dn + mid + up, each row's three taps
 * summed left to right, every product rounded (filter.c's order),
 * truncated and clipped to 0..255. d must not overlap the rows (the
 * vector paths may write a byte of it twice). */
void ts_px_sharpen_row(uint8_t *d, const uint8_t *up, const uint8_t *mid,
		       const uint8_t *dn, size_t C, size_t m);

/* g[x] = PIL's L of RGB pixel x, (19595 R + 38470 G + 7471 B + 32768) >>
 * 16, for npx pixels C >= 3 bytes apart. */
void ts_px_gray(uint8_t *g, const uint8_t *rgb, size_t npx, int C);

/* Pillow's nearest fixed-point sampling of n RGB pixels into out: pixel k
 * is the source's at column (xx + k ax) >> 16, row (yy + k ay) >> 16
 * (16.16 positions, every one inside the source, whose rows are stride
 * bytes apart and whose last byte is src[src_bytes - 1]). AVX2 gathers 8
 * pixels a step; the other paths copy one at a time. */
void ts_px_gather3(uint8_t *out, const uint8_t *src, size_t stride, size_t src_bytes,
		   int32_t xx, int32_t yy, int32_t ax, int32_t ay, int n);

/* lo[c] and hi[c] narrowed to the smallest and largest value of channel c
 * over h rows (stride bytes apart) of w pixels of C channels
 * (autocontrast's bounds without a cut-off). */
void ts_px_minmax(const uint8_t *data, size_t stride, size_t w, size_t h, int C, uint8_t *lo,
		  uint8_t *hi);

/* PIL's 8-bit HSV back to RGB, its per-level terms (color.c's from_hsv):
 * for hue level k its sector (0..5) and fraction, for saturation level k
 * its fraction k / 255. */
struct ts_px_hsv_tabs {
	float f[256], fs[256];
	int32_t sector[256];
};

/* adjust_hue's vector rows: the first pixels of a row of npx RGB pixels
 * to HSV, hue + shift, and back, as color.c's to_hsv and from_hsv do
 * them (the same float and double operations, lane for lane); returns
 * how many it did (0 without a vector path): color.c does the rest. */
size_t ts_px_hue3(uint8_t *row, size_t npx, uint8_t shift, const struct ts_px_hsv_tabs *tab);

/* A row of w RGB pixels mirrored in place (left-right flip). */
void ts_px_flip3(uint8_t *row, size_t w);

/* ImageEnhance.Color of npx packed RGB pixels: each byte blended with
 * its pixel's gray (ts_px_gray). */
void ts_px_color3(uint8_t *r, size_t npx, float alpha);

#endif
