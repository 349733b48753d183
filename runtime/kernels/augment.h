/*
 * augment.h - augment kernels (augment.c, prefix ts_aug_) and the fused
 * output stage (output.c, prefix ts_out_).
 *
 * The numbers follow torchvision 0.14 applied to PIL images, as a
 * DataLoader does: box choices copy torchvision's get_params arithmetic
 * (Python's round-half-even included) but draw from the counter-based
 * struct ts_rng, never from torch; resize copies Pillow's ImagingResample
 * (separable, antialiased, fixed-point for uint8); ToTensor + Normalize is
 * float32 (x / 255 - mean) / std, in that order, without FMA contraction.
 *
 * Images are struct ts_image (HWC, uint8, uint16 or float32). Unless said
 * otherwise `out` must not alias `in`. Kernels return 0 or a negative code
 * (TS_E_NOMEM, -EINVAL, TS_E_ARG); they never print.
 *
 * Thread safety: every function works only on its arguments, except that
 * ts_aug_resize keeps per-thread scratch (coefficients and the horizontal
 * pass' rows), grown on demand and reused so that a warm worker allocates
 * nothing per sample; it is freed when the thread exits or by
 * ts_aug_scratch_free(). Different threads may call everything at once on
 * different images.
 */
#ifndef TS_AUGMENT_H
#define TS_AUGMENT_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "plan.h"
#include "image.h"
#include "pixel.h"
#include "rng.h"

/* ---- Box choices (deterministic given the rng stream) ---- */

/* Output size of a resize op on a w x h image. With resize->size_w == 0,
 * torchvision Resize(int): the shorter side becomes size_h and the longer
 * int(size_h * long / short), and with resize->max_size > 0 a longer side
 * above it becomes max_size and the shorter int(max_size * size_h /
 * long) (at least 1); otherwise exactly size_w x size_h. */
void ts_aug_resize_dims(int w, int h, const struct ts_op_resize *resize, int *ow,
			int *oh);

/* torchvision CenterCrop of cw x ch from a w x h image: the top-left corner
 * (*x, *y) in image coordinates, round-half-even like Python's round. When
 * the crop is larger than the image the corner is negative: torchvision
 * pads (left (cw-w)//2, top (ch-h)//2) with zeros, and ts_aug_crop reads
 * zeros outside the image, which gives the same pixels. */
void ts_aug_center_box(int w, int h, int cw, int ch, int *x, int *y);

/* RandomResizedCrop.get_params: up to 10 attempts of area = w*h*U(scale),
 * ratio = exp(U(log ratio_lo, log ratio_hi)), cw = round(sqrt(area*ratio)),
 * ch = round(sqrt(area/ratio)); accepted when 0 < cw <= w and 0 < ch <= h,
 * then y = below(h-ch+1), x = below(w-cw+1). Else the center crop clamped to
 * the ratio range. Draw order per attempt: scale, log-ratio (then y, x). */
void ts_aug_rrc_box(int w, int h, const struct ts_op_crop *rrc, struct ts_rng *rng,
		    int *x, int *y, int *cw, int *ch);

/* RandomCrop(size, padding): the image is padded by rc->padding zeros on
 * every side, then y = below(H-ch+1), x = below(W-cw+1) in the padded
 * image (y drawn first); the corner is returned in image coordinates, so
 * it may be negative. A crop larger than the padded image is centered. */
void ts_aug_random_crop_box(int w, int h, const struct ts_op_crop *rc,
			    struct ts_rng *rng, int *x, int *y);

/* Tiles of a tile op: nx columns by ny rows of size_w x size_h at strides
 * stride_w, stride_h, covering only whole tiles. Tile k (0 <= k < nx*ny)
 * has its corner at x = (k % nx) * stride_w, y = (k / nx) * stride_h. */
void ts_aug_tile_grid(int w, int h, const struct ts_op_tile *tile, int *nx,
		      int *ny);

/* ---- Kernels ---- */

/* Resize in to ow x oh into out (reserved here; same channels and dtype).
 * BILINEAR is Pillow's triangle filter, its support scaled by the
 * downscale factor when antialias is true (as PIL always does; false gives
 * plain align_corners=False bilinear); AREA is Pillow's box filter, always
 * scaled (torchvision's InterpolationMode.BOX); NEAREST is Pillow's
 * nearest (source pixel about floor((i + 0.5) * in / out), accumulated as
 * Pillow does). uint8 uses Pillow's 22-bit fixed point and is bit-exact
 * with PIL's Image.resize (measured: max abs diff 0 levels); uint16 and
 * float32 use the same weights in float. in may be a view (data pointing
 * into a larger image, its stride kept). */
int ts_aug_resize(const struct ts_image *in, struct ts_image *out, int ow,
		  int oh, enum ts_interp interp, bool antialias);

/* A window of a resize: outputs [ox, ox + ow) x [oy, oy + oh) of the
 * full_w x full_h source resized to rw x rh, where in holds only the
 * source's region at (in_x, in_y), in->width x in->height; the region must
 * hold every tap those outputs read (ts_aug_resize_span). The pixels are
 * those of ts_aug_resize of the whole source, then cropped: every output
 * has the same coefficients either way. */
struct ts_aug_window {
	int full_w, full_h;   /* the whole source */
	int in_x, in_y;       /* where in lies in it */
	int rw, rh;           /* the size the whole source is resized to */
	int ox, oy, ow, oh;   /* the window of that result computed */
	bool cold;            /* in is not in the CPU's caches (a decoded-cache
				 frame): its rows are prefetched (resample.h) */
};

/* ts_aug_resize's window form (out is ow x oh); -EINVAL when the window
 * lies outside the result, in outside the source or a tap outside in, or
 * for NEAREST on anything but the whole image. */
int ts_aug_resize_window(const struct ts_image *in, struct ts_image *out,
			 const struct ts_aug_window *win, enum ts_interp interp,
			 bool antialias);

/* The source span [*s0, *s1) of one axis (in_size resized to out_size)
 * that outputs [o0, o0 + n) read: every tap of their coefficients, zero
 * weights included. NEAREST: the whole axis. */
void ts_aug_resize_span(int in_size, int out_size, enum ts_interp interp,
			bool antialias, int o0, int n, int *s0, int *s1);

/* Copy the cw x ch window at (x, y) of in into out (reserved here). Pixels
 * of the window outside in are zero (torchvision's padding, fill 0). */
int ts_aug_crop(const struct ts_image *in, struct ts_image *out, int x, int y,
		int cw, int ch);

/* Mirror in place: left-right when horizontal, else top-bottom. */
void ts_aug_flip(struct ts_image *img, bool horizontal);

/* torchvision ColorJitter(brightness, contrast, saturation, hue) in place
 * on a uint8 RGB or gray image: a random order of the four (of the three
 * when hue is 0; Fisher-Yates on the rng), then each factor U(max(0,
 * 1-v), 1+v) drawn in the order brightness, contrast, saturation, then
 * the hue turn U(-hue, hue); a zero parameter skips that adjustment.
 * Applied as PIL's ImageEnhance (blend with black, the mean gray, the
 * gray image) and adjust_hue (ts_color_hue). uint16/float32 images use
 * the same arithmetic in float, and take no hue (-EINVAL). */
int ts_aug_color_jitter(struct ts_image *img, const struct ts_op *op,
			struct ts_rng *rng);

/* The draws of ts_aug_color_jitter: order[k] is the k-th adjustment
 * (0 brightness, 1 contrast, 2 saturation, 3 hue; only order[0..2] is
 * shuffled when op->hue is 0), f the three factors (1 when unused), *hue
 * the turn (0 when unused). */
void ts_aug_jitter_params(const struct ts_op *op, struct ts_rng *rng,
			  int order[4], float f[3], double *hue);

/* The three adjustments with given factors (what ts_aug_color_jitter
 * applies), in place; PIL-exact on uint8. Saturation on 1 channel is a
 * no-op. */
void ts_aug_brightness(struct ts_image *img, float factor);
void ts_aug_contrast(struct ts_image *img, float factor);
void ts_aug_saturation(struct ts_image *img, float factor);

/* PIL's convert("L") of an RGB in: (19595 r + 38470 g + 7471 b + 32768) >>
 * 16 for uint8 (0.299/0.587/0.114 in float otherwise), replicated to
 * `channels` (1 or 3) channels of out. A 1-channel in is copied or
 * replicated. */
int ts_aug_grayscale(const struct ts_image *in, struct ts_image *out,
		     int channels);

/* The ops' rows of the kernel table (kernel.h, ts_kernels_augment at the
 * end of augment.c) run RESIZE, CENTER_CROP, RANDOM_CROP,
 * RANDOM_RESIZED_CROP, FLIP, COLOR_JITTER, GRAYSCALE, NORMALIZE and TO on
 * one image. FLIP applies when U < p; GRAYSCALE when U < p (p >= 1:
 * always), and always when the channel count must change. NORMALIZE
 * yields float32 normalized values; TO converts to uint8, uint16 or
 * float32 (float16 exists only in the output stage: ts_image holds no
 * float16) keeping HWC. */

/* filter: true when the sample is kept, i.e. when at most max_fraction of
 * its pixels have a channel mean above threshold * full scale. */
bool ts_aug_filter_keep(const struct ts_op *filter,
			const struct ts_image *img);

/* Free this thread's resize scratch (also done at thread exit). */
void ts_aug_scratch_free(void);

/* ---- The fused output stage (output.c) ---- */

/* Write one sample into its ring slot. output is the plan's output stage
 * (its last op); its parts are ops whose kernel rows (kernel.h) have a box
 * or an into hook (geometry and colour, e.g. resize, the crops,
 * color_jitter, grayscale: run first, in order, through tmp1/tmp2)
 * followed by ops with a tail hook (flip, normalize, to), which run as
 * ONE pass from the last image straight into dst: flip, normalize, dtype
 * conversion (uint8, uint16, float16, float32) and layout (NHWC, or NCHW
 * planes). A box that lies inside the image and is not resampled is read
 * in place, without a copy. Random parts draw from ts_rng_init(seed,
 * epoch, index, part->index).
 * dst_bytes must equal the sample's size (height * width * channels *
 * dtype size); otherwise TS_E_ARG. in is not modified; tmp1 and tmp2 are
 * the worker's scratch images. Returns 0, TS_E_NOMEM or TS_E_ARG. */
int ts_out_write(const struct ts_op *output, const struct ts_image *in,
		 uint64_t seed, uint64_t epoch, uint64_t index,
		 struct ts_image *tmp1, struct ts_image *tmp2, void *dst,
		 size_t dst_bytes, struct ts_error *err);

/* The shape ts_out_write writes for in: the size after the stage's
 * geometry (drawn as ts_out_write draws it), the final pass' dtype and
 * layout. The channels are in's. */
void ts_out_shape(const struct ts_op *output, const struct ts_image *in,
		  uint64_t seed, uint64_t epoch, uint64_t index, int *width,
		  int *height, enum ts_dtype *dtype, enum ts_layout *layout);

/* Whether ts_out_write would write in as it is for this sample: only tail
 * parts (kernel.h), none of which flips (as drawn), normalizes or
 * converts in's dtype or its NHWC layout. */
bool ts_out_is_copy(const struct ts_op *output, const struct ts_image *in,
		    uint64_t seed, uint64_t epoch, uint64_t index);

/* IEEE binary16 bits of a float, rounded to nearest even; overflow gives
 * infinity, NaN stays NaN (quiet), subnormals are exact. */
uint16_t ts_out_f16_from_f32(float f);
/* The float value of binary16 bits (exact). */
float ts_out_f32_from_f16(uint16_t h);

/* Store float v (a [0,1] value or a normalized one) as dt at dst[i], as
 * the output stage stores it: uint8 and uint16 scaled to full scale,
 * rounded to nearest even and clamped. */
static inline void ts_out_store(void *dst, size_t i, enum ts_dtype dt, float v)
{
	switch (dt) {
	case TS_DTYPE_F32:
		((float *)dst)[i] = v;
		break;
	case TS_DTYPE_F16:
		((uint16_t *)dst)[i] = ts_out_f16_from_f32(v);
		break;
	case TS_DTYPE_U8:
		v = rintf(v * 255.0f);
		((uint8_t *)dst)[i] = (uint8_t)(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v);
		break;
	case TS_DTYPE_U16:
		v = rintf(v * 65535.0f);
		((uint16_t *)dst)[i] = (uint16_t)(v < 0.0f ? 0.0f : v > 65535.0f ? 65535.0f : v);
		break;
	}
}

/* PIL's ImagingBlend of one uint8 value (pixel.h's, the one reference). */
static inline uint8_t ts_aug_blend_u8(int a, int b, float alpha)
{
	return ts_px_blend1(a, b, alpha);
}

#endif
