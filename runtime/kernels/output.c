/*
 * output.c - the fused tail: geometry first (through scratch images, or
 * as a view when a crop lies inside the image), then one pass that flips,
 * normalizes, converts the dtype and lays out the sample straight into its
 * ring slot.
 *
 * uint8 to float32 (ToTensor, Normalize) runs in outpass.c (vectorised,
 * same bits on every path); the other uint8 cases below.
 * Numerics: for uint8 input the pass is a table lookup per channel whose
 * entries are computed exactly as torchvision does, float32(x) / 255 then
 * (v - mean) / std in float32, so CenterCrop + ToTensor + Normalize matches
 * it to the last bit (the build targets plain x86-64/aarch64 without
 * -ffp-contract=fast FMA; the two operations are separate statements).
 */
#include "augment.h"
#include "kernel.h"
#include "outpass.h"
#include "profile.h"
#include "trace.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "util.h"

uint16_t ts_out_f16_from_f32(float f)
{
	uint32_t x;
	memcpy(&x, &f, sizeof(x));
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	uint32_t ax = x & 0x7fffffffu;
	if (ax >= 0x7f800000u) /* inf or NaN (quieted) */
		return sign | (ax > 0x7f800000u ? 0x7e00 : 0x7c00);
	if (ax >= 0x477ff000u) /* >= 65520 rounds to infinity */
		return sign | 0x7c00;
	if (ax < 0x38800000u) {
		/* Below 2^-14: a subnormal half, value * 2^24 rounded. */
		uint32_t e = ax >> 23;
		if (e < 102)
			return sign;
		uint32_t m = (ax & 0x7fffffu) | 0x800000u;
		uint32_t shift = 126 - e;
		uint32_t r = m >> shift;
		uint32_t rem = m & ((1u << shift) - 1);
		uint32_t half = 1u << (shift - 1);
		if (rem > half || (rem == half && (r & 1)))
			r++;
		return sign | (uint16_t)r;
	}
	/* Normal: rebias the exponent, round 13 mantissa bits away; a carry
	 * into the exponent is the right answer. */
	uint32_t r = ax - 0x38000000u;
	uint32_t h = r >> 13, rem = r & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
		h++;
	return sign | (uint16_t)h;
}

float ts_out_f32_from_f16(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
	uint32_t x;
	if (e == 0x1f) {
		x = sign | 0x7f800000u | (m << 13);
	} else if (e == 0) {
		float v = ldexpf((float)m, -24);
		return sign ? -v : v;
	} else {
		x = sign | ((e + 112) << 23) | (m << 13);
	}
	float f;
	memcpy(&f, &x, sizeof(f));
	return f;
}

/* One source value (element of the image, as [0,1] or raw for float) to
 * the output's float value before the dtype conversion. */
static inline float src_unit(const uint8_t *row, enum ts_dtype t, size_t i)
{
	if (t == TS_DTYPE_U8)
		return (float)row[i] / 255.0f;
	if (t == TS_DTYPE_U16)
		return (float)((const uint16_t *)(const void *)row)[i] / 65535.0f;
	return ((const float *)(const void *)row)[i];
}

static inline float norm(float v, const struct ts_kernel_tail *t, int c)
{
	float d = v - t->mean[c];
	return d / t->std[c];
}

static inline float clampf(float v, float lo, float hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Index of output element (y, x, c) in the slot. */
static inline size_t dst_index(const struct ts_kernel_tail *t, int W, int H, int C,
			       int y, int x, int c)
{
	if (t->layout == TS_LAYOUT_NCHW)
		return ((size_t)c * H + y) * W + x;
	return ((size_t)y * W + x) * C + c;
}

static inline const uint8_t *row_of(const struct ts_image *img,
				    const struct ts_kernel_tail *t, int y)
{
	int sy = t->vflip ? img->height - 1 - y : y;
	return img->data + (size_t)sy * img->stride;
}

/* The final pass for uint8 sources: a 256-entry table per channel holds
 * each output element, so the loop is load, look up, store; a flip only
 * changes where a row starts and the step. Written per element type so
 * the compiler sees fixed-width stores. */
#define U8_PASS(T, LUT)                                                        \
	do {                                                                   \
		T *o = dst;                                                    \
		if (t->layout == TS_LAYOUT_NCHW) {                             \
			for (int c = 0; c < C; c++)                            \
				for (int y = 0; y < H; y++) {                  \
					const uint8_t *p = row_of(img, t, y) + first + c; \
					for (int x = 0; x < W; x++, p += step) \
						*o++ = LUT[c][*p];             \
				}                                              \
		} else if (C == 3) {                                           \
			for (int y = 0; y < H; y++) {                          \
				const uint8_t *p = row_of(img, t, y) + first;  \
				for (int x = 0; x < W; x++, p += step) {       \
					o[0] = LUT[0][p[0]];                   \
					o[1] = LUT[1][p[1]];                   \
					o[2] = LUT[2][p[2]];                   \
					o += 3;                                \
				}                                              \
			}                                                      \
		} else {                                                       \
			for (int y = 0; y < H; y++) {                          \
				const uint8_t *p = row_of(img, t, y) + first;  \
				for (int x = 0; x < W; x++, p += step)         \
					for (int c = 0; c < C; c++)            \
						*o++ = LUT[c][p[c]];           \
			}                                                      \
		}                                                              \
	} while (0)

static void pass_u8(const struct ts_image *img, const struct ts_kernel_tail *t, void *dst)
{
	const int W = img->width, H = img->height, C = img->channels;
	if (t->dtype == TS_DTYPE_F32) {
		/* The common case (ToTensor, Normalize): outpass.c, vectorised. */
		static const float zero[4], one[4] = { 1.0f, 1.0f, 1.0f, 1.0f };
		ts_outpass_u8_f32(img->data, img->stride, W, H, C, t->hflip, t->vflip,
				  t->layout == TS_LAYOUT_NCHW, t->normalize ? t->mean : zero,
				  t->normalize ? t->std : one, dst);
		return;
	}
	if (t->dtype == TS_DTYPE_U8 && !t->normalize && !t->hflip &&
	    t->layout == TS_LAYOUT_NHWC) {
		/* uint8 HWC as it is (device(cuda)'s host half): row copies. */
		for (int y = 0; y < H; y++)
			memcpy((uint8_t *)dst + (size_t)y * W * C,
			       row_of(img, t, y), (size_t)W * C);
		return;
	}
	union {
		uint16_t h[4][256];
		uint8_t b[4][256];
	} lut;
	for (int c = 0; c < C; c++)
		for (int v = 0; v < 256; v++) {
			float u = (float)v / 255.0f;
			float n = t->normalize ? norm(u, t, c) : u;
			switch (t->dtype) {
			case TS_DTYPE_F32: /* ts_outpass_u8_f32 above */
				break;
			case TS_DTYPE_F16:
				lut.h[c][v] = ts_out_f16_from_f32(n);
				break;
			case TS_DTYPE_U16:
				lut.h[c][v] = t->normalize
					? (uint16_t)clampf(rintf(n * 65535.0f), 0.0f, 65535.0f)
					: (uint16_t)(v * 257);
				break;
			case TS_DTYPE_U8:
				lut.b[c][v] = t->normalize
					? (uint8_t)clampf(rintf(n * 255.0f), 0.0f, 255.0f)
					: (uint8_t)v;
				break;
			}
		}
	const ptrdiff_t step = t->hflip ? -C : C;
	const size_t first = t->hflip ? (size_t)(W - 1) * C : 0;
	switch (t->dtype) {
	case TS_DTYPE_F32:
		break;
	case TS_DTYPE_F16:
	case TS_DTYPE_U16:
		U8_PASS(uint16_t, lut.h);
		break;
	case TS_DTYPE_U8:
		U8_PASS(uint8_t, lut.b);
		break;
	}
}

/* uint16 and float32 sources: per element arithmetic. */
static void pass_generic(const struct ts_image *img, const struct ts_kernel_tail *t,
			 void *dst)
{
	const int W = img->width, H = img->height, C = img->channels;
	const enum ts_dtype st = img->dtype;
	for (int y = 0; y < H; y++) {
		const uint8_t *s = row_of(img, t, y);
		for (int x = 0; x < W; x++) {
			int sx = t->hflip ? W - 1 - x : x;
			for (int c = 0; c < C; c++) {
				float v;
				size_t si = (size_t)sx * C + c;
				size_t di = dst_index(t, W, H, C, y, x, c);
				if (st == TS_DTYPE_U16 && !t->normalize &&
				    t->dtype == TS_DTYPE_U8) {
					uint16_t u = ((const uint16_t *)(const void *)s)[si];
					((uint8_t *)dst)[di] = (uint8_t)((u + 128) / 257);
					continue;
				}
				if (st == TS_DTYPE_U16 && !t->normalize &&
				    t->dtype == TS_DTYPE_U16) {
					((uint16_t *)dst)[di] =
						((const uint16_t *)(const void *)s)[si];
					continue;
				}
				v = src_unit(s, st, si);
				if (t->normalize)
					v = norm(v, t, c);
				ts_out_store(dst, di, t->dtype, v);
			}
		}
	}
}

/* Tail parts with a post hook in one output stage, at most. */
#define TS_OUT_MAX_POST 4

/* Fold tail part p (k its row) into t, drawing from its own stream as
 * ts_out_write does. */
static void fold_tail(const struct ts_op *p, const struct ts_kernel *k,
		      uint64_t seed, uint64_t epoch, uint64_t index,
		      struct ts_kernel_tail *t)
{
	struct ts_rng rng;
	ts_rng_init(&rng, seed, epoch, index, (uint64_t)p->index);
	k->tail(p, &rng, t);
}

int ts_out_write(const struct ts_op *output, const struct ts_image *in,
		 uint64_t seed, uint64_t epoch, uint64_t index,
		 struct ts_image *tmp1, struct ts_image *tmp2, void *dst,
		 size_t dst_bytes, struct ts_error *err)
{
	struct ts_image view = *in;   /* what the next step reads */
	struct ts_image *owner = NULL; /* which tmp holds view's pixels */
	struct ts_kernel_tail t = { .dtype = in->dtype, .layout = TS_LAYOUT_NHWC };
	struct ts_rng rng;
	size_t i = 0;
	int rc = 0;
	uint64_t pt = ts_prof_now();

	/* Geometry and colour (the parts before the first tail part), each
	 * reading view and writing the tmp that view does not live in. */
	for (; i < output->output.n_parts; i++) {
		const struct ts_op *p = &output->output.parts[i];
		const struct ts_kernel *k = ts_kernel_find(p->kind);
		if (k && k->tail)
			break;
		struct ts_image *next = owner == tmp1 ? tmp2 : tmp1;
		ts_rng_init(&rng, seed, epoch, index, (uint64_t)p->index);
		if (k && k->box) {
			struct ts_kernel_box b;
			k->box(p, view.width, view.height, &rng, &b);
			ts_kernel_note_box(p, &b, 8);
			if (b.tw > 0) {
				struct ts_image box = ts_image_view(&view, b.x, b.y, b.cw, b.ch);
				rc = ts_aug_resize(&box, next, b.tw, b.th, b.interp,
						   b.antialias);
			} else if (b.x >= 0 && b.y >= 0 && b.x + b.cw <= view.width &&
				   b.y + b.ch <= view.height) {
				/* Inside: read it in place. */
				view = ts_image_view(&view, b.x, b.y, b.cw, b.ch);
				continue;
			} else {
				rc = ts_aug_crop(&view, next, b.x, b.y, b.cw, b.ch);
			}
			if (rc < 0)
				return ts_error_set(err, rc, "output stage: %s failed",
						    ts_op_kind_name(p->kind));
		} else if (k && k->into) {
			rc = k->into(p, &view, next, &rng, err);
			if (rc < 0)
				return rc;
			if (rc == 1)
				continue; /* not applied: view stays */
		} else {
			return ts_error_set(err, TS_E_ARG,
					    "output stage cannot run %s",
					    ts_op_kind_name(p->kind));
		}
		view = *next;
		owner = next;
	}
	ts_prof_add(TS_PROF_RESAMPLE, pt);
	pt = ts_prof_now();
	/* the tail parts that write into the finished slot (random_erasing),
	 * run after the pass in order */
	const struct ts_op *post[TS_OUT_MAX_POST];
	const struct ts_kernel *post_k[TS_OUT_MAX_POST];
	int n_post = 0;
	for (; i < output->output.n_parts; i++) {
		const struct ts_op *p = &output->output.parts[i];
		const struct ts_kernel *k = ts_kernel_find(p->kind);
		if (!k || !k->tail)
			return ts_error_set(err, TS_E_ARG,
					    "%s after flip/normalize/to in the output stage",
					    ts_op_kind_name(p->kind));
		if (k->post) {
			if (n_post == TS_OUT_MAX_POST)
				return ts_error_set(err, TS_E_ARG,
						    "more than %d %s in the output stage",
						    TS_OUT_MAX_POST, ts_op_kind_name(p->kind));
			post[n_post] = p;
			post_k[n_post++] = k;
			continue;
		}
		fold_tail(p, k, seed, epoch, index, &t);
	}
	size_t need = (size_t)view.width * view.height * view.channels *
		      ts_dtype_size(t.dtype);
	if (need != dst_bytes)
		return ts_error_set(err, TS_E_ARG,
				    "output sample is %dx%dx%d %s (%zu bytes), slot holds %zu",
				    view.height, view.width, view.channels,
				    ts_dtype_name(t.dtype), need, dst_bytes);
	if (view.dtype == TS_DTYPE_U8)
		pass_u8(&view, &t, dst);
	else
		pass_generic(&view, &t, dst);
	for (int k = 0; k < n_post; k++) {
		ts_rng_init(&rng, seed, epoch, index, (uint64_t)post[k]->index);
		post_k[k]->post(post[k], &rng, dst, &t, view.channels, view.height,
				view.width);
	}
	ts_prof_add(TS_PROF_OUTPUT, pt);
	return 0;
}

void ts_out_shape(const struct ts_op *output, const struct ts_image *in,
		  uint64_t seed, uint64_t epoch, uint64_t index, int *width,
		  int *height, enum ts_dtype *dtype, enum ts_layout *layout)
{
	struct ts_kernel_tail t = { .dtype = in->dtype, .layout = TS_LAYOUT_NHWC };
	int w = in->width, h = in->height;
	struct ts_trace *trace = ts_trace_pause(); /* draws again, applies nothing */
	for (size_t i = 0; i < output->output.n_parts; i++) {
		const struct ts_op *p = &output->output.parts[i];
		const struct ts_kernel *k = ts_kernel_find(p->kind);
		struct ts_rng rng;
		ts_rng_init(&rng, seed, epoch, index, (uint64_t)p->index);
		if (k && k->box) {
			struct ts_kernel_box b;
			k->box(p, w, h, &rng, &b);
			w = b.tw > 0 ? b.tw : b.cw;
			h = b.tw > 0 ? b.th : b.ch;
		} else if (k && k->tail) {
			fold_tail(p, k, seed, epoch, index, &t);
		}
	}
	ts_trace_resume(trace);
	*width = w;
	*height = h;
	*dtype = t.dtype;
	*layout = t.layout;
}

bool ts_out_is_copy(const struct ts_op *output, const struct ts_image *in,
		    uint64_t seed, uint64_t epoch, uint64_t index)
{
	struct ts_kernel_tail t = { .dtype = in->dtype, .layout = TS_LAYOUT_NHWC };
	struct ts_trace *trace = ts_trace_pause(); /* draws again, applies nothing */
	bool tails = true;
	for (size_t i = 0; i < output->output.n_parts && tails; i++) {
		const struct ts_op *p = &output->output.parts[i];
		const struct ts_kernel *k = ts_kernel_find(p->kind);
		tails = k && k->tail;
		if (tails)
			fold_tail(p, k, seed, epoch, index, &t);
	}
	ts_trace_resume(trace);
	return tails && !t.hflip && !t.vflip && !t.normalize && t.dtype == in->dtype &&
	       t.layout == TS_LAYOUT_NHWC;
}
