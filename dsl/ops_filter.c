/*
 * ops_filter.c - the neighbourhood filters of torchvision.transforms:
 * gaussian_blur(kernel_size, sigma), with a fixed sigma as
 * F.gaussian_blur takes it or a range drawn per sample as the
 * GaussianBlur class draws it, on pixels or on the float32 tensor
 * after normalize. Its kernel is in runtime/filter.c.
 */
#include "checker.h"

#include <stdio.h>

/* ---- gaussian_blur --------------------------------------------------- */

static const struct ts_param p_gaussian_blur[] = {
	{ .name = "kernel_size", .type = TS_PT_SIZE_PAIR, .positional = true,
	  .required = true, P_MIN(1), P_MAX(999),
	  .doc = "odd kernel side k, or [kx, ky] (torchvision's order: width first)" },
	{ .name = "sigma", .type = TS_PT_RANGE, .positional = true,
	  .def = "0.1..2.0", .def_lo = 0.1, .def_hi = 2.0, .point_ok = true,
	  P_MIN(0), P_MAX(1000),
	  .doc = "standard deviation > 0, or lo..hi drawn per sample (both axes alike)" },
};

static int build_gaussian_blur(struct ts_check *c, const struct ts_opdef *def,
			       struct ts_check_val *vals,
			       const struct ts_ast_call *call,
			       const struct ts_shape *in, struct ts_op *op)
{
	const struct ts_check_val *k = ts_check_arg(def, vals, "kernel_size");
	const struct ts_check_val *s = ts_check_arg(def, vals, "sigma");
	int rc = 0;

	/* SIZE_PAIR reads [a, b] as (h, w); torchvision's pair is (x, y). */
	op->blur.kernel_w = k->h;
	op->blur.kernel_h = k->w;
	op->blur.sigma_lo = s->lo;
	op->blur.sigma_hi = s->hi;
	if (!k->bad && (!(op->blur.kernel_w & 1) || !(op->blur.kernel_h & 1))) {
		char hint[192];
		int e = !(op->blur.kernel_w & 1) ? op->blur.kernel_w : op->blur.kernel_h;
		snprintf(hint, sizeof(hint), "use %d or %d: the kernel is centred on "
			 "the pixel", e - 1 > 0 ? e - 1 : e + 1, e + 1);
		ts_check_err(c, k->loc, hint,
			     "parameter 'kernel_size' must be odd, got %d", e);
		op->blur.kernel_w |= 1;
		op->blur.kernel_h |= 1;
		rc = -1;
	}
	if (!s->bad && !(op->blur.sigma_lo > 0)) {
		ts_check_err(c, s->loc, "sigma 0 would not blur: give a value above 0, "
			     "or drop gaussian_blur",
			     "parameter 'sigma' must be above 0, got %g", op->blur.sigma_lo);
		op->blur.sigma_lo = op->blur.sigma_hi > 0 ? op->blur.sigma_hi : 1.0;
		rc = -1;
	}
	return rc;
}

static void describe_gaussian_blur(const struct ts_op *op, char *buf, size_t n)
{
	char k[48], s[64];

	if (op->blur.kernel_w == op->blur.kernel_h)
		snprintf(k, sizeof(k), "%d", op->blur.kernel_w);
	else
		snprintf(k, sizeof(k), "[%d, %d]", op->blur.kernel_w, op->blur.kernel_h);
	if (op->blur.sigma_lo < op->blur.sigma_hi)
		snprintf(s, sizeof(s), "%g..%g", op->blur.sigma_lo, op->blur.sigma_hi);
	else
		snprintf(s, sizeof(s), "%g", op->blur.sigma_lo);
	snprintf(buf, n, "gaussian_blur(kernel_size=%s, sigma=%s)", k, s);
}

/* uint8 or uint16 pixels as PIL and torchvision's uint8 tensors take
 * them, or the float32 tensor after normalize or to(float32), as
 * F.gaussian_blur takes a float tensor; nhwc, before the output stage's
 * layout. */
static int shape_gaussian_blur(const struct ts_op *op, const struct ts_shape *in,
			       struct ts_shape *out, struct ts_shape_err *e)
{
	char buf[64];
	*out = *in;
	if (in->dtype == TS_DTYPE_F16 || in->layout == TS_LAYOUT_NCHW) {
		ts_check_shape_str(in, buf, sizeof(buf));
		snprintf(e->msg, sizeof(e->msg),
			 "'gaussian_blur' works on uint8, uint16 or float32 nhwc data, but the data is %s here",
			 buf);
		snprintf(e->hint, sizeof(e->hint), "%s",
			 in->dtype == TS_DTYPE_F16
				 ? "blur before to(float16), or convert to float32 instead"
				 : "move gaussian_blur before to(..., nchw)");
		return -1;
	}
	return 0;
}

/* ---- the rows -------------------------------------------------------- */

const struct ts_opdef ts_ops_filter[] = {
	{ TS_TRANSFORM(GAUSSIAN_BLUR, p_gaussian_blur, 0,
		       "Gaussian blur, reflect border; sigma fixed or drawn per sample"),
	  .shape = shape_gaussian_blur, .build = build_gaussian_blur,
	  .describe = describe_gaussian_blur },
	TS_ROW_END,
};
