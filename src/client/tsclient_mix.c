/* tsclient_mix.c - Mixup, CutMix and label smoothing on a trainer's batch
 * (tsclient.h, "label mixing"), as timm.data.Mixup documents them, with
 * draws keyed by (seed, epoch, index) instead of a global generator so a
 * rerun, and the Python client, mix alike. */
#include "tsclient.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "util.h"

/* Blends are a product, a product and a sum, each rounded to float as
 * torch rounds x*lam + x'*(1-lam): a fused multiply-add would give other
 * bytes than the Python client's torch path and timm. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* The stream of a draw: one per batch, pair or sample (unit), apart from
 * the pipeline's own streams by the tag. */
#define MIX_STREAM_TAG 0x6d69787570ULL /* "mixup" */

static void mix_defaults(struct ts_client_mix *m)
{
	memset(m, 0, sizeof(*m));
	m->size = sizeof(*m);
	m->mixup_alpha = 1.0;
	m->prob = 1.0;
	m->switch_prob = 0.5;
	m->mode = TS_CLIENT_MIX_BATCH;
	m->correct_lam = 1;
	m->label_smoothing = 0.1; /* timm's, as every default here */
	m->num_classes = 1000;
	m->enabled = 1;
}

/* size is the caller's sizeof (ts_client_mix_init passes it). */
TS_EXPORT void ts_client_mix_init_size(struct ts_client_mix *m, size_t size)
{
	struct ts_client_mix d;
	mix_defaults(&d);
	ts_sized_init(m, size, &d, sizeof(d));
}

/* The caller's parameters as this library lays them out (the fields its
 * header has; defaults for the rest) into *known. */
static int mix_known(const struct ts_client_mix *m, struct ts_client_mix *known,
		     struct ts_error *err)
{
	if (!m)
		return ts_error_set(err, TS_E_ARG, "mix: no parameters");
	mix_defaults(known);
	return ts_sized_in(known, sizeof(*known), m, "struct ts_client_mix",
			   "ts_client_mix_init sets it", err);
}

static int bad_unit(struct ts_error *err, const char *name, double v)
{
	return ts_error_set(err, TS_E_ARG, "mix: %s = %g is outside 0 .. 1", name, v);
}

static int mix_check(const struct ts_client_mix *m, struct ts_error *err)
{
	if (!(m->mixup_alpha >= 0) || isinf(m->mixup_alpha))
		return ts_error_set(err, TS_E_ARG, "mix: mixup_alpha = %g must be a finite "
				    "number >= 0 (0: no Mixup)", m->mixup_alpha);
	if (!(m->cutmix_alpha >= 0) || isinf(m->cutmix_alpha))
		return ts_error_set(err, TS_E_ARG, "mix: cutmix_alpha = %g must be a finite "
				    "number >= 0 (0: no CutMix)", m->cutmix_alpha);
	if (m->cutmix_max != 0 || m->cutmix_min != 0) {
		if (!(m->cutmix_min >= 0 && m->cutmix_min < m->cutmix_max &&
		      m->cutmix_max <= 1))
			return ts_error_set(err, TS_E_ARG, "mix: cutmix_minmax = (%g, %g): "
					    "want 0 <= min < max <= 1, as fractions of the "
					    "image's sides", m->cutmix_min, m->cutmix_max);
	}
	if (!(m->prob >= 0 && m->prob <= 1))
		return bad_unit(err, "prob", m->prob);
	if (!(m->switch_prob >= 0 && m->switch_prob <= 1))
		return bad_unit(err, "switch_prob", m->switch_prob);
	if (!(m->label_smoothing >= 0 && m->label_smoothing <= 1))
		return bad_unit(err, "label_smoothing", m->label_smoothing);
	if (m->mode != TS_CLIENT_MIX_BATCH && m->mode != TS_CLIENT_MIX_PAIR &&
	    m->mode != TS_CLIENT_MIX_ELEM)
		return ts_error_set(err, TS_E_ARG, "mix: mode %d is not one of batch (0), "
				    "pair (1), elem (2)", m->mode);
	if (m->num_classes < 1)
		return ts_error_set(err, TS_E_ARG, "mix: num_classes must be set (>= 1): "
				    "the width of the soft targets");
	return 0;
}

/* ---- draws --------------------------------------------------------------- */

static double uniform_open(struct ts_rng *r)
{
	return 1.0 - ts_rng_uniform(r); /* (0, 1]: a logarithm's argument */
}

static double normal(struct ts_rng *r)
{
	/* Box-Muller, one of the pair: draws stay a fixed count per call. */
	double u1 = uniform_open(r), u2 = ts_rng_uniform(r);
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* log of a Gamma(a, 1) draw, a > 0: Marsaglia and Tsang's method (2000)
 * for a >= 1, boosted by U^(1/a) below; in logarithms so that a tiny
 * alpha (whose draws underflow a double) still gives a lam of 0 or 1. */
static double log_gamma_draw(struct ts_rng *r, double a)
{
	double boost = 0;
	if (a < 1) {
		boost = log(uniform_open(r)) / a;
		a += 1;
	}
	double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
	for (;;) {
		double x = normal(r), v = 1 + c * x;
		if (v <= 0)
			continue;
		v = v * v * v;
		double u = uniform_open(r);
		if (u < 1 - 0.0331 * x * x * x * x ||
		    log(u) < 0.5 * x * x + d * (1 - v + log(v)))
			return log(d) + log(v) + boost;
	}
}

/* Beta(a, a) as X / (X + Y) of two Gamma(a) draws. */
static double beta_draw(struct ts_rng *r, double a)
{
	double lx = log_gamma_draw(r, a), ly = log_gamma_draw(r, a);
	return 1.0 / (1.0 + exp(ly - lx));
}

/* Uniform integer in [lo, hi), numpy.random.randint's; lo when the range
 * is empty (a tiny image), where numpy raises. */
static int randint(struct ts_rng *r, int lo, int hi)
{
	if (hi <= lo)
		return lo;
	return lo + (int)ts_rng_below(r, (uint64_t)(hi - lo));
}

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

struct draw {
	int op;        /* enum ts_client_mix_op */
	double lam;    /* as drawn (batch mode) or rounded to float (else) */
};

/* One draw of timm's _params_per_batch / _params_per_elem: whether to mix,
 * CutMix or Mixup, and lam. */
static struct draw draw_one(const struct ts_client_mix *m, struct ts_rng *r, int per_elem)
{
	struct draw d = { TS_CLIENT_MIX_NONE, 1.0 };
	double ca = m->cutmix_max > 0 ? 1.0 : m->cutmix_alpha;
	double ma = m->mixup_alpha;
	if (!m->enabled || (ma <= 0 && ca <= 0))
		return d;
	if (!(ts_rng_uniform(r) < m->prob))
		return d;
	int cut;
	if (ma > 0 && ca > 0)
		cut = ts_rng_uniform(r) < m->switch_prob;
	else
		cut = ca > 0;
	double lam = beta_draw(r, cut ? ca : ma);
	if (per_elem)
		lam = (float)lam; /* timm keeps per-element lams as float32 */
	if (lam == 1.0)
		return d; /* timm leaves such a sample (batch) as it is */
	d.op = cut ? TS_CLIENT_MIX_BOX : TS_CLIENT_MIX_BLEND;
	d.lam = lam;
	return d;
}

/* The CutMix box of lam in an h x w image and its corrected lam
 * (cutmix_bbox_and_lam): square-ratio sides sqrt(1 - lam) centred at a
 * uniform pixel and clipped, or sides uniform in [min, max) of the image's.
 * per_elem: the ratio in float32, as timm computes it from a float32 lam. */
static void draw_box(const struct ts_client_mix *m, struct ts_rng *r, int h, int w,
		     int per_elem, double *lam, struct ts_client_mix_sample *s)
{
	if (m->cutmix_max > 0) {
		int ch = randint(r, (int)(h * m->cutmix_min), (int)(h * m->cutmix_max));
		int cw = randint(r, (int)(w * m->cutmix_min), (int)(w * m->cutmix_max));
		s->y0 = randint(r, 0, h - ch);
		s->x0 = randint(r, 0, w - cw);
		s->y1 = s->y0 + ch;
		s->x1 = s->x0 + cw;
	} else {
		int ch, cw;
		if (per_elem) {
			float ratio = sqrtf(1.0f - (float)*lam);
			ch = (int)((float)h * ratio);
			cw = (int)((float)w * ratio);
		} else {
			double ratio = sqrt(1.0 - *lam);
			ch = (int)(h * ratio);
			cw = (int)(w * ratio);
		}
		int cy = randint(r, 0, h), cx = randint(r, 0, w);
		s->y0 = clampi(cy - ch / 2, 0, h);
		s->y1 = clampi(cy + ch / 2, 0, h);
		s->x0 = clampi(cx - cw / 2, 0, w);
		s->x1 = clampi(cx + cw / 2, 0, w);
	}
	if (m->correct_lam || m->cutmix_max > 0) {
		double area = (double)(s->y1 - s->y0) * (double)(s->x1 - s->x0);
		*lam = 1.0 - area / ((double)h * (double)w);
	}
}

/* A sample's final parameters from its draw; lam in double (batch mode)
 * or float (pair, elem), and its complement rounded alike. */
static void set_sample(struct ts_client_mix_sample *s, uint64_t partner, int op,
		       double lam, int per_elem)
{
	s->partner = partner;
	s->op = op;
	s->lam_drawn = lam;
	if (op != TS_CLIENT_MIX_BOX)
		s->y0 = s->y1 = s->x0 = s->x1 = 0;
	if (per_elem) {
		s->lam = (float)lam;
		s->lam_partner = 1.0f - s->lam;
	} else {
		s->lam = (float)lam;
		s->lam_partner = (float)(1.0 - lam);
	}
}

static void params(const struct ts_client_mix *m, const struct ts_batch *b,
		   struct ts_client_mix_sample *out)
{
	size_t n = b->n;
	int h = b->height, w = b->width;
	struct ts_rng r;
	if (m->mode == TS_CLIENT_MIX_BATCH) {
		ts_rng_init(&r, m->seed, b->epoch, b->index, MIX_STREAM_TAG);
		struct draw d = draw_one(m, &r, 0);
		struct ts_client_mix_sample box = { 0 };
		if (d.op == TS_CLIENT_MIX_BOX)
			draw_box(m, &r, h, w, 0, &d.lam, &box);
		for (size_t i = 0; i < n; i++) {
			out[i] = box;
			set_sample(&out[i], n - 1 - i, d.op, d.lam, 0);
		}
	} else {
		/* pair: a draw per first-half sample, which its partner shares;
		 * elem: a draw per sample. Unit u's stream is its own. */
		int pair = m->mode == TS_CLIENT_MIX_PAIR;
		size_t units = pair ? n / 2 : n;
		for (size_t u = 0; u < units; u++) {
			ts_rng_init(&r, m->seed, b->epoch, b->index, MIX_STREAM_TAG + 1 + u);
			struct draw d = draw_one(m, &r, 1);
			struct ts_client_mix_sample s = { 0 };
			if (d.op == TS_CLIENT_MIX_BOX)
				draw_box(m, &r, h, w, 1, &d.lam, &s);
			out[u] = s;
			set_sample(&out[u], n - 1 - u, d.op, d.lam, 1);
			if (pair) {
				out[n - 1 - u] = out[u];
				out[n - 1 - u].partner = u;
			}
		}
	}
	if (n % 2) {
		/* the middle sample, its own partner: unchanged */
		struct ts_client_mix_sample *s = &out[n / 2];
		memset(s, 0, sizeof(*s));
		set_sample(s, n / 2, TS_CLIENT_MIX_NONE, 1.0, m->mode != TS_CLIENT_MIX_BATCH);
	}
}

TS_EXPORT int ts_client_mix_check(const struct ts_client_mix *m, struct ts_error *err)
{
	struct ts_client_mix known;
	int rc = mix_known(m, &known, err);
	return rc < 0 ? rc : mix_check(&known, err);
}

static int check_batch(const struct ts_client_mix *m, const struct ts_batch *b,
		       struct ts_error *err)
{
	int rc = mix_check(m, err);
	if (rc < 0)
		return rc;
	if (!b || b->n < 1)
		return ts_error_set(err, TS_E_ARG, "mix: an empty batch");
	if (b->height < 1 || b->width < 1 || b->channels < 1)
		return ts_error_set(err, TS_E_ARG, "mix: a batch of %dx%dx%d samples",
				    b->height, b->width, b->channels);
	return 0;
}

TS_EXPORT int ts_client_mix_params(const struct ts_client_mix *mix, const struct ts_batch *b,
				   struct ts_client_mix_sample *out, struct ts_error *err)
{
	struct ts_client_mix known;
	const struct ts_client_mix *m = &known;
	int rc = mix_known(mix, &known, err);
	if (rc == 0)
		rc = check_batch(m, b, err);
	if (rc < 0)
		return rc;
	if (!out)
		return ts_error_set(err, TS_E_ARG, "mix: no output array");
	params(m, b, out);
	return 0;
}

/* ---- mixing -------------------------------------------------------------- */

/* The segment [from, to) of one row of sample s, own pixels a, partner's b,
 * into o (which may be a). */
static void row_op(const float *a, const float *b, float *o, size_t from, size_t to,
		   int op, float l, float lp)
{
	size_t x;
	switch (op) {
	case TS_CLIENT_MIX_BLEND:
		for (x = from; x < to; x++) {
			float own = a[x] * l, other = b[x] * lp;
			o[x] = own + other;
		}
		break;
	case TS_CLIENT_MIX_BOX: /* "other": the caller passes the box only */
		if (o != b)
			memmove(o + from, b + from, (to - from) * sizeof(float));
		break;
	default:
		if (o != a)
			memmove(o + from, a + from, (to - from) * sizeof(float));
		break;
	}
}

/* One row of sample s: its op over the row, the box's columns [bx0, bx1)
 * (in floats) when the row crosses the box. */
static void row(const float *a, const float *b, float *o, size_t len,
		const struct ts_client_mix_sample *s, int y, size_t per_col)
{
	if (s->op != TS_CLIENT_MIX_BOX) {
		row_op(a, b, o, 0, len, s->op, s->lam, s->lam_partner);
		return;
	}
	if (y < s->y0 || y >= s->y1 || s->x1 <= s->x0) {
		row_op(a, b, o, 0, len, TS_CLIENT_MIX_NONE, 0, 0);
		return;
	}
	size_t x0 = (size_t)s->x0 * per_col, x1 = (size_t)s->x1 * per_col;
	row_op(a, b, o, 0, x0, TS_CLIENT_MIX_NONE, 0, 0);
	row_op(a, b, o, x0, x1, TS_CLIENT_MIX_BOX, 0, 0);
	row_op(a, b, o, x1, len, TS_CLIENT_MIX_NONE, 0, 0);
}

/* Samples i and j = n-1-i of in (in_per floats apart) into out (out_per
 * apart), each from both originals: row by row, the i row kept in tmp
 * before it is overwritten in place. */
static void mix_pair(const struct ts_batch *b, const float *in, size_t in_per, float *out,
		     size_t out_per, float *tmp, size_t i, size_t j,
		     const struct ts_client_mix_sample *si,
		     const struct ts_client_mix_sample *sj)
{
	size_t h = (size_t)b->height, w = (size_t)b->width, c = (size_t)b->channels;
	int nchw = b->layout == TS_LAYOUT_NCHW;
	size_t rows = nchw ? c * h : h, len = nchw ? w : w * c, per_col = nchw ? 1 : c;
	for (size_t r = 0; r < rows; r++) {
		const float *a = in + i * in_per + r * len, *bb = in + j * in_per + r * len;
		float *oa = out + i * out_per + r * len, *ob = out + j * out_per + r * len;
		int y = (int)(nchw ? r % h : r);
		const float *a_orig = a;
		if (oa == a) {
			memcpy(tmp, a, len * sizeof(float));
			a_orig = tmp;
		}
		row(a, bb, oa, len, si, y, per_col);
		row(bb, a_orig, ob, len, sj, y, per_col);
	}
}

static void targets_of(const struct ts_client_mix *m, const struct ts_batch *b,
		       const struct ts_client_mix_sample *p, float *targets)
{
	size_t k = m->num_classes;
	double offd = m->label_smoothing / (double)k;
	float off = (float)offd, on = (float)(1.0 - m->label_smoothing + offd);
	for (size_t i = 0; i < b->n; i++) {
		float *t = targets + i * k;
		float l = p[i].lam, lp = p[i].lam_partner;
		int32_t ci = b->labels[i], cj = b->labels[p[i].partner];
		float base = off * l + off * lp;
		for (size_t c = 0; c < k; c++)
			t[c] = base;
		t[ci] = on * l + off * lp;
		if (cj == ci) {
			t[ci] = on * l + on * lp;
		} else {
			t[cj] = off * l + on * lp;
		}
	}
}

TS_EXPORT int ts_client_mix_batch(const struct ts_client_mix *mix, const struct ts_batch *b,
				  float *images, float *targets, struct ts_error *err)
{
	struct ts_client_mix known;
	const struct ts_client_mix *m = &known;
	int rc = mix_known(mix, &known, err);
	if (rc == 0)
		rc = check_batch(m, b, err);
	if (rc < 0)
		return rc;
	if (b->dtype != TS_DTYPE_F32)
		return ts_error_set(err, TS_E_ARG, "mix: samples are not float32 (dtype %d): "
				    "end the pipeline with to(float32, ...)", b->dtype);
	if (b->layout != TS_LAYOUT_NCHW && b->layout != TS_LAYOUT_NHWC)
		return ts_error_set(err, TS_E_ARG, "mix: layout %d is neither NHWC nor NCHW",
				    b->layout);
	size_t per = (size_t)b->height * (size_t)b->width * (size_t)b->channels;
	if (b->sample_bytes != per * sizeof(float))
		return ts_error_set(err, TS_E_ARG, "mix: sample_bytes %zu is not %dx%dx%d "
				    "floats", b->sample_bytes, b->height, b->width,
				    b->channels);
	if (b->sample_stride && (b->sample_stride < b->sample_bytes ||
				 b->sample_stride % sizeof(float)))
		return ts_error_set(err, TS_E_ARG, "mix: sample_stride %zu is not a whole "
				    "number of floats at least sample_bytes (%zu)",
				    b->sample_stride, b->sample_bytes);
	if (!b->data || !b->labels || !images || !targets)
		return ts_error_set(err, TS_E_ARG, "mix: no %s",
				    !b->data ? "batch data" : !b->labels ? "labels" :
				    !images ? "image output" : "target output");
	for (size_t i = 0; i < b->n; i++) {
		int32_t c = b->labels[i];
		if (c < 0 || (uint32_t)c >= m->num_classes)
			return ts_error_set(err, TS_E_ARG, "mix: sample %zu of the batch "
					    "(epoch %llu, index %llu) has label %d, outside 0 .. "
					    "%u: num_classes must be the data set's class count",
					    i, (unsigned long long)b->epoch,
					    (unsigned long long)(b->index + i),
					    c, m->num_classes - 1);
	}
	struct ts_client_mix_sample *p = malloc(b->n * sizeof(*p));
	size_t len = b->layout == TS_LAYOUT_NCHW ? (size_t)b->width :
			 (size_t)b->width * (size_t)b->channels;
	float *tmp = malloc(len * sizeof(float));
	if (!p || !tmp) {
		free(p);
		free(tmp);
		return ts_error_set(err, TS_E_NOMEM, "mix: out of memory");
	}
	params(m, b, p);
	const float *in = b->data;
	size_t n = b->n;
	/* The ring's slots may be padded (sample_stride); the caller's own
	 * buffer is packed, the batch itself mixed in place keeps its stride. */
	size_t in_per = (b->sample_stride ? b->sample_stride : b->sample_bytes) / sizeof(float);
	size_t out_per = images == in ? in_per : per;
	for (size_t i = 0; i < n / 2; i++)
		mix_pair(b, in, in_per, images, out_per, tmp, i, n - 1 - i, &p[i], &p[n - 1 - i]);
	if (n % 2 && images != in)
		memcpy(images + (n / 2) * out_per, in + (n / 2) * in_per, b->sample_bytes);
	targets_of(m, b, p, targets);
	free(tmp);
	free(p);
	return 0;
}
