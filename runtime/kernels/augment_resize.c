/*
 * augment_resize.c - resize: Pillow's ImagingResample (separable,
 * antialiased, fixed point for uint8; the passes themselves are
 * resample.c's, SIMD-dispatched), nearest, and the window form the
 * decode fusion uses, with the per-thread scratch they reuse. Prefix
 * ts_aug_ (declared in augment.h), like the rest of the augment kernels.
 */
#include "augment.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "augment_internal.h"
#include "resample.h"
#include "util.h"

/* ---- Per-thread scratch for resize ---- */

struct scratch {
	uint8_t *buf;
	size_t cap;
};

static __thread struct scratch tls_scratch;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_ok;

static void scratch_release(void *p)
{
	struct scratch *s = p;
	free(s->buf);
	s->buf = NULL;
	s->cap = 0;
}

static void scratch_key_init(void)
{
	scratch_key_ok = pthread_key_create(&scratch_key, scratch_release) == 0;
}

void ts_aug_scratch_free(void)
{
	scratch_release(&tls_scratch);
	ts_resample_scratch_free();
}

/* The thread's scratch, at least need bytes, 16-aligned. Growing
 * registers the thread-exit destructor so worker threads free theirs. */
static void *scratch_get(size_t need)
{
	struct scratch *s = &tls_scratch;
	if (need <= s->cap)
		return s->buf;
	size_t cap = need + need / 2;
	void *p = NULL;
	if (posix_memalign(&p, 16, cap) != 0)
		return NULL;
	free(s->buf);
	s->buf = p;
	s->cap = cap;
	pthread_once(&scratch_once, scratch_key_init);
	if (scratch_key_ok)
		pthread_setspecific(scratch_key, s);
	return p;
}

/* ---- Resize: Pillow's ImagingResample ---- */

#define PRECISION_BITS (32 - 8 - 2)

static double filter_triangle(double x)
{
	if (x < 0.0)
		x = -x;
	return x < 1.0 ? 1.0 - x : 0.0;
}

static double filter_box(double x)
{
	return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0;
}

/* Pillow's bicubic_filter: the Keys cubic with a = -0.5, support 2. */
static double filter_bicubic(double x)
{
	const double a = -0.5;
	if (x < 0.0)
		x = -x;
	if (x < 1.0)
		return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
	if (x < 2.0)
		return (((x - 5) * x + 8) * x - 4) * a;
	return 0.0;
}

static double sinc(double x)
{
	if (x == 0.0)
		return 1.0;
	x = x * M_PI;
	return sin(x) / x;
}

/* Pillow's lanczos_filter: the 3-lobe truncated sinc, support 3. */
static double filter_lanczos(double x)
{
	if (-3.0 <= x && x < 3.0)
		return sinc(x) * sinc(x / 3);
	return 0.0;
}

/* The filter and its support for a (non-nearest) interpolation: Pillow's
 * BILINEAR, BOX, BICUBIC and LANCZOS. */
static void pick_filter(enum ts_interp interp, double (**filter)(double),
			double *support, bool *antialias)
{
	*filter = filter_triangle;
	*support = 1.0;
	if (interp == TS_INTERP_AREA) {
		*filter = filter_box;
		*support = 0.5;
		*antialias = true; /* an area average always covers the box */
	} else if (interp == TS_INTERP_BICUBIC) {
		*filter = filter_bicubic;
		*support = 2.0;
	} else if (interp == TS_INTERP_LANCZOS) {
		*filter = filter_lanczos;
		*support = 3.0;
	}
}

static int coeff_ksize(int in_size, int out_size, double support,
		       bool antialias)
{
	double fs = (double)in_size / out_size;
	if (fs < 1.0 || !antialias)
		fs = 1.0;
	return (int)ceil(support * fs) * 2 + 1;
}

/* Pillow's precompute_coeffs for the box [0, in_size), for outputs
 * [o0, o0 + n) of out_size (entry i is output o0 + i): per output pixel the
 * first input index, the count, and ksize normalised weights in double (kd)
 * and in 22-bit fixed point (ki, rounded away from zero as Pillow's
 * normalize_coeffs_8bpc does). The centre of output xx is (xx + 0.5) *
 * scale and the filter is evaluated at input pixel centres. Each output's
 * coefficients depend on nothing but xx, so a window of them is the same
 * as those of the whole axis. */
static inline __attribute__((always_inline)) void
coeff_compute_with(int in_size, int out_size, int o0, int n,
		   double (*filter)(double), double support_base,
		   bool antialias, int ksize, int *bounds, double *kd,
		   int32_t *ki)
{
	double scale = (double)((float)in_size - 0.0f) / out_size;
	double fs = scale;
	if (fs < 1.0 || !antialias)
		fs = 1.0;
	double support = support_base * fs;
	double ss = 1.0 / fs;
	for (int i = 0; i < n; i++) {
		int xx = o0 + i;
		double center = (xx + 0.5) * scale;
		double ww = 0.0;
		int xmin = (int)(center - support + 0.5);
		if (xmin < 0)
			xmin = 0;
		int xmax = (int)(center + support + 0.5);
		if (xmax > in_size)
			xmax = in_size;
		xmax -= xmin;
		double *k = kd + (size_t)i * ksize;
		int x;
		for (x = 0; x < xmax; x++) {
			double w = filter((x + xmin - center + 0.5) * ss);
			k[x] = w;
			ww += w;
		}
		for (x = 0; x < xmax; x++)
			if (ww != 0.0)
				k[x] /= ww;
		for (; x < ksize; x++)
			k[x] = 0;
		bounds[i * 2] = xmin;
		bounds[i * 2 + 1] = xmax;
		int32_t *kq = ki + (size_t)i * ksize;
		for (x = 0; x < ksize; x++)
			kq[x] = k[x] < 0 ? (int32_t)(-0.5 + k[x] * (1 << PRECISION_BITS))
					 : (int32_t)(0.5 + k[x] * (1 << PRECISION_BITS));
	}
}

/* coeff_compute_with, its filter inlined: the bilinear recipes' filter
 * is called once per tap of every output of both axes, per image (the
 * same arithmetic in the same order, so the same coefficients). */
static void coeff_compute(int in_size, int out_size, int o0, int n,
			  double (*filter)(double), double support_base,
			  bool antialias, int ksize, int *bounds, double *kd,
			  int32_t *ki)
{
	if (filter == filter_triangle)
		coeff_compute_with(in_size, out_size, o0, n, filter_triangle, support_base,
				   antialias, ksize, bounds, kd, ki);
	else
		coeff_compute_with(in_size, out_size, o0, n, filter, support_base,
				   antialias, ksize, bounds, kd, ki);
}

void ts_aug_resize_span(int in_size, int out_size, enum ts_interp interp,
			bool antialias, int o0, int n, int *s0, int *s1)
{
	double (*filter)(double);
	double support_base;
	pick_filter(interp, &filter, &support_base, &antialias);
	if (interp == TS_INTERP_NEAREST || n <= 0) {
		*s0 = 0;
		*s1 = in_size;
		return;
	}
	/* coeff_compute's bounds, at the window's two ends: both edges grow
	 * with the output index. */
	double scale = (double)((float)in_size - 0.0f) / out_size;
	double fs = scale < 1.0 || !antialias ? 1.0 : scale;
	double support = support_base * fs;
	int lo = (int)((o0 + 0.5) * scale - support + 0.5);
	int hi = (int)((o0 + n - 1 + 0.5) * scale + support + 0.5);
	*s0 = lo < 0 ? 0 : lo > in_size ? in_size : lo;
	*s1 = hi > in_size ? in_size : hi < *s0 ? *s0 : hi;
}

/* Horizontal pass, uint8: rows [y0, y0 + rows) of in into out
 * (resample.c: generic C or a vector kernel, bit-exact either way). */
static void resample_h_u8(const struct ts_image *in, int y0, int rows,
			  uint8_t *out, size_t ostride, int ow, int ksize,
			  const int *bounds, const int32_t *kk, bool cold)
{
	ts_resample_h_u8(in->data + (size_t)y0 * in->stride, in->stride, rows,
			 in->width, in->channels, out, ostride, ow, ksize, bounds, kk,
			 cold ? TS_RESAMPLE_AHEAD : 0);
}

/* Vertical pass, uint8 (resample.c). Rows of src are sstride apart and
 * bounds are relative to src's first row. */
static void resample_v_u8(const uint8_t *src, size_t sstride, int n_elems,
			  uint8_t *out, size_t ostride, int oh, int ksize,
			  const int *bounds, const int32_t *kk)
{
	ts_resample_v_u8(src, sstride, n_elems, out, ostride, oh, ksize, bounds, kk);
}

/* uint16 / float32: the same coefficients in float, intermediate rows in
 * float32 so no precision is lost between passes. */
static void resample_float(const struct ts_image *in, struct ts_image *out,
			   int ow, int oh, int kh, const int *bh,
			   const double *kdh, int kv, const int *bv,
			   const double *kdv, float *mid, int y0, int rows)
{
	const int C = in->channels;
	const size_t n = (size_t)ow * C;
	for (int y = 0; y < rows; y++) {
		const uint8_t *s = in->data + (size_t)(y + y0) * in->stride;
		float *d = mid + (size_t)y * n;
		for (int xx = 0; xx < ow; xx++) {
			const int xmin = bh[2 * xx], cnt = bh[2 * xx + 1];
			const double *k = kdh + (size_t)xx * kh;
			for (int c = 0; c < C; c++) {
				double acc = 0.0;
				for (int x = 0; x < cnt; x++)
					acc += ts_aug_load_f(s, in->dtype,
						      (size_t)(x + xmin) * C + c) * k[x];
				d[(size_t)xx * C + c] = (float)acc;
			}
		}
	}
	for (int yy = 0; yy < oh; yy++) {
		const int ymin = bv[2 * yy] - y0, cnt = bv[2 * yy + 1];
		const double *k = kdv + (size_t)yy * kv;
		uint8_t *d = out->data + (size_t)yy * out->stride;
		for (size_t i = 0; i < n; i++) {
			double acc = 0.0;
			for (int y = 0; y < cnt; y++)
				acc += mid[(size_t)(y + ymin) * n + i] * k[y];
			ts_aug_store_f(d, out->dtype, i, (float)acc);
		}
	}
}

/* Pillow's nearest resize (ImagingScaleAffine): the source column of
 * output x is (int)xo with xo starting at 0.5 * scale and accumulated by
 * scale per column, rows likewise. The accumulation (not (i + 0.5) *
 * scale) matters: it decides ties such as 500 -> 61 rows, row 30. */
static int resize_nearest(const struct ts_image *in, struct ts_image *out,
			  int ow, int oh)
{
	int *xtab = scratch_get((size_t)ow * sizeof(int));
	if (!xtab)
		return TS_E_NOMEM;
	const size_t px = (size_t)in->channels * ts_dtype_size(in->dtype);
	double sx = (double)in->width / ow, sy = (double)in->height / oh;
	double xo = sx * 0.5;
	for (int x = 0; x < ow; x++) {
		int xi = xo < 0.0 ? -1 : (int)xo;
		xtab[x] = xi < 0 ? 0 : xi >= in->width ? in->width - 1 : xi;
		xo += sx;
	}
	double yo = sy * 0.5;
	for (int y = 0; y < oh; y++, yo += sy) {
		int yi = (int)yo;
		if (yi >= in->height)
			yi = in->height - 1;
		const uint8_t *s = in->data + (size_t)yi * in->stride;
		uint8_t *d = out->data + (size_t)y * out->stride;
		if (px == 3) {
			for (int x = 0; x < ow; x++) {
				const uint8_t *p = s + (size_t)xtab[x] * 3;
				d[0] = p[0];
				d[1] = p[1];
				d[2] = p[2];
				d += 3;
			}
		} else {
			for (int x = 0; x < ow; x++, d += px)
				memcpy(d, s + (size_t)xtab[x] * px, px);
		}
	}
	return 0;
}

static size_t align16(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

int ts_aug_resize(const struct ts_image *in, struct ts_image *out, int ow,
		  int oh, enum ts_interp interp, bool antialias)
{
	const struct ts_aug_window win = {
		.full_w = in->width, .full_h = in->height, .rw = ow, .rh = oh,
		.ow = ow, .oh = oh,
	};
	return ts_aug_resize_window(in, out, &win, interp, antialias);
}

int ts_aug_resize_window(const struct ts_image *in, struct ts_image *out,
			 const struct ts_aug_window *win, enum ts_interp interp,
			 bool antialias)
{
	const int ow = win->ow, oh = win->oh;
	if (ow <= 0 || oh <= 0 || in->width <= 0 || in->height <= 0 ||
	    win->rw <= 0 || win->rh <= 0 || win->ox < 0 || win->oy < 0 ||
	    win->ox + ow > win->rw || win->oy + oh > win->rh || win->in_x < 0 ||
	    win->in_y < 0 || win->in_x + in->width > win->full_w ||
	    win->in_y + in->height > win->full_h)
		return -EINVAL;
	const int C = in->channels;
	const size_t esize = ts_dtype_size(in->dtype);
	const bool need_h = win->rw != win->full_w, need_v = win->rh != win->full_h;
	if (interp == TS_INTERP_NEAREST && (need_h || need_v)) {
		if (win->full_w != in->width || win->full_h != in->height ||
		    win->ox || win->oy || ow != win->rw || oh != win->rh)
			return -EINVAL; /* only whole images */
		int rc = ts_image_reserve(out, ow, oh, C, in->dtype);
		return rc < 0 ? rc : resize_nearest(in, out, ow, oh);
	}
	int rc = ts_image_reserve(out, ow, oh, C, in->dtype);
	if (rc < 0)
		return rc;
	if (!need_h && !need_v) {
		int x = win->ox - win->in_x, y = win->oy - win->in_y;
		if (x < 0 || y < 0 || x + ow > in->width || y + oh > in->height)
			return -EINVAL;
		size_t row = (size_t)ow * C * esize;
		for (int r = 0; r < oh; r++)
			memcpy(out->data + (size_t)r * out->stride,
			       in->data + (size_t)(y + r) * in->stride + (size_t)x * C * esize, row);
		return 0;
	}

	double (*filter)(double);
	double support;
	pick_filter(interp, &filter, &support, &antialias);
	const int kh = coeff_ksize(win->full_w, win->rw, support, antialias);
	const int kv = coeff_ksize(win->full_h, win->rh, support, antialias);
	const bool u8 = in->dtype == TS_DTYPE_U8;
	const size_t mid_elem = u8 ? 1 : sizeof(float);

	/* Carve one scratch block: coefficients of both axes, then the
	 * horizontal pass' rows. */
	size_t o_bh = 0;
	size_t o_kdh = o_bh + align16(sizeof(int) * 2 * (size_t)ow);
	size_t o_kih = o_kdh + align16(sizeof(double) * (size_t)ow * kh);
	size_t o_bv = o_kih + align16(sizeof(int32_t) * (size_t)ow * kh);
	size_t o_kdv = o_bv + align16(sizeof(int) * 2 * (size_t)oh);
	size_t o_kiv = o_kdv + align16(sizeof(double) * (size_t)oh * kv);
	size_t o_mid = o_kiv + align16(sizeof(int32_t) * (size_t)oh * kv);
	/* Rows the vertical pass reads: at most all input rows. */
	size_t mid_rows = (size_t)in->height;
	size_t total = o_mid + align16(mid_elem * (size_t)ow * C * mid_rows);
	uint8_t *base = scratch_get(total);
	if (!base)
		return TS_E_NOMEM;
	int *bh = (int *)(void *)(base + o_bh);
	double *kdh = (double *)(void *)(base + o_kdh);
	int32_t *kih = (int32_t *)(void *)(base + o_kih);
	int *bv = (int *)(void *)(base + o_bv);
	double *kdv = (double *)(void *)(base + o_kdv);
	int32_t *kiv = (int32_t *)(void *)(base + o_kiv);
	uint8_t *mid = base + o_mid;

	/* Coefficients of the window's outputs only, their input indices made
	 * relative to in; every tap must lie inside in (ts_aug_resize_span
	 * gives the region that holds them). */
	coeff_compute(win->full_w, win->rw, win->ox, ow, filter, support, antialias,
		      kh, bh, kdh, kih);
	coeff_compute(win->full_h, win->rh, win->oy, oh, filter, support, antialias,
		      kv, bv, kdv, kiv);
	for (int i = 0; i < ow; i++) {
		bh[2 * i] -= win->in_x;
		if (bh[2 * i] < 0 || bh[2 * i] + bh[2 * i + 1] > in->width)
			return -EINVAL;
	}
	for (int i = 0; i < oh; i++) {
		bv[2 * i] -= win->in_y;
		if (bv[2 * i] < 0 || bv[2 * i] + bv[2 * i + 1] > in->height)
			return -EINVAL;
	}
	/* First and one-past-last input rows the vertical pass uses. */
	int y_first = bv[0];
	int y_last = bv[2 * oh - 2] + bv[2 * oh - 1];

	if (!u8) {
		/* Identity weights on an axis that keeps its size keep the
		 * code single (coeff_compute gives them: one tap of 1). */
		resample_float(in, out, ow, oh, kh, bh, kdh, kv, bv, kdv,
			       (float *)(void *)mid, y_first, y_last - y_first);
		return 0;
	}
	if (need_h && !need_v) {
		resample_h_u8(in, win->oy - win->in_y, oh, out->data, out->stride, ow, kh,
			      bh, kih, win->cold);
		return 0;
	}
	if (!need_h) {
		resample_v_u8(in->data + (size_t)(win->ox - win->in_x) * C, in->stride,
			      ow * C, out->data, out->stride, oh, kv, bv, kiv);
		return 0;
	}
	size_t mstride = (size_t)ow * C;
	resample_h_u8(in, y_first, y_last - y_first, mid, mstride, ow, kh, bh,
		      kih, win->cold);
	for (int i = 0; i < oh; i++)
		bv[2 * i] -= y_first;
	resample_v_u8(mid, mstride, ow * C, out->data, out->stride, oh, kv, bv,
		      kiv);
	return 0;
}
