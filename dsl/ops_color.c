/*
 * ops_color.c - the colour operators of torchvision.transforms.functional,
 * named and parameterised as it names them: the table-driven ones
 * (invert, posterize, solarize, autocontrast, equalize, each with a
 * probability p as their Random* classes have), the fixed-factor
 * enhancements (adjust_brightness, adjust_contrast, adjust_saturation)
 * and adjust_hue, adjust_sharpness (ImageEnhance.Sharpness) and
 * adjust_gamma.
 * All of them take uint8 nhwc pixels, as torchvision's integer paths do
 * (adjust_gamma uint16 too). Their kernels are in runtime/color.c
 * (adjust_sharpness in runtime/filter.c).
 */
#include "checker.h"

#include <stdio.h>

/* ---- invert, autocontrast, equalize: p only -------------------------- */

static const struct ts_param p_prob_only[] = {
	{ .name = "p", .type = TS_PT_NUMBER, .def = "1.0", .def_num = 1.0, P_MIN(0),
	  P_MAX(1), .doc = "probability of applying it" },
};

static int build_prob(struct ts_check *c, const struct ts_opdef *def,
		      struct ts_check_val *vals, const struct ts_ast_call *call,
		      const struct ts_shape *in, struct ts_op *op)
{
	op->color.p = ts_check_arg(def, vals, "p")->num;
	return 0;
}

static int shape_invert(const struct ts_op *op, const struct ts_shape *in,
			struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	return ts_registry_need_u8("invert", in, e);
}

static void describe_invert(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "invert(p=%g)", op->color.p);
}

static int shape_autocontrast(const struct ts_op *op, const struct ts_shape *in,
			      struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	return ts_registry_need_u8("autocontrast", in, e);
}

static void describe_autocontrast(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "autocontrast(p=%g)", op->color.p);
}

static int shape_equalize(const struct ts_op *op, const struct ts_shape *in,
			  struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	return ts_registry_need_u8("equalize", in, e);
}

static void describe_equalize(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "equalize(p=%g)", op->color.p);
}

/* ---- posterize ------------------------------------------------------- */

static const struct ts_param p_posterize[] = {
	{ .name = "bits", .type = TS_PT_INT, .positional = true, .required = true,
	  P_MIN(1), P_MAX(8), .doc = "bits kept per channel, 1 to 8" },
	{ .name = "p", .type = TS_PT_NUMBER, .def = "1.0", .def_num = 1.0, P_MIN(0),
	  P_MAX(1), .doc = "probability of applying it" },
};

static int shape_posterize(const struct ts_op *op, const struct ts_shape *in,
			   struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	return ts_registry_need_u8("posterize", in, e);
}

static int build_posterize(struct ts_check *c, const struct ts_opdef *def,
			   struct ts_check_val *vals,
			   const struct ts_ast_call *call,
			   const struct ts_shape *in, struct ts_op *op)
{
	op->color.bits = (int)ts_check_arg(def, vals, "bits")->num;
	op->color.p = ts_check_arg(def, vals, "p")->num;
	return 0;
}

static void describe_posterize(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "posterize(bits=%d, p=%g)", op->color.bits, op->color.p);
}

/* ---- solarize -------------------------------------------------------- */

static const struct ts_param p_solarize[] = {
	{ .name = "threshold", .type = TS_PT_NUMBER, .positional = true,
	  .required = true, P_MIN(0), P_MAX(255),
	  .doc = "levels at or above it are inverted, 0 to 255" },
	{ .name = "p", .type = TS_PT_NUMBER, .def = "1.0", .def_num = 1.0, P_MIN(0),
	  P_MAX(1), .doc = "probability of applying it" },
};

static int shape_solarize(const struct ts_op *op, const struct ts_shape *in,
			  struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	return ts_registry_need_u8("solarize", in, e);
}

static int build_solarize(struct ts_check *c, const struct ts_opdef *def,
			  struct ts_check_val *vals,
			  const struct ts_ast_call *call,
			  const struct ts_shape *in, struct ts_op *op)
{
	op->color.level = ts_check_arg(def, vals, "threshold")->num;
	op->color.p = ts_check_arg(def, vals, "p")->num;
	return 0;
}

static void describe_solarize(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "solarize(threshold=%g, p=%g)", op->color.level, op->color.p);
}

/* ---- adjust_brightness, adjust_contrast, adjust_saturation ----------- */

/* A factor past 255 saturates every pixel already; the bound keeps the
 * float arithmetic finite. */
#define P_FACTOR(n, d) \
	{ .name = n, .type = TS_PT_NUMBER, .positional = true, .required = true, \
	  P_MIN(0), P_MAX(255), .doc = d }

static const struct ts_param p_brightness[] = {
	P_FACTOR("brightness_factor", "0 black, 1 unchanged, 2 twice as bright"),
};
static const struct ts_param p_contrast[] = {
	P_FACTOR("contrast_factor", "0 the mean gray, 1 unchanged, 2 twice the contrast"),
};
static const struct ts_param p_saturation[] = {
	P_FACTOR("saturation_factor", "0 gray, 1 unchanged, 2 twice the saturation"),
};

static int shape_brightness(const struct ts_op *op, const struct ts_shape *in,
			    struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	return ts_registry_need_u8("adjust_brightness", in, e);
}

static int shape_contrast(const struct ts_op *op, const struct ts_shape *in,
			  struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	return ts_registry_need_u8("adjust_contrast", in, e);
}

/* Saturation of a gray image is a silent no-op in torchvision: here an
 * error, since the pipeline surely meant something else. */
static int shape_saturation(const struct ts_op *op, const struct ts_shape *in,
			    struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	if (ts_registry_need_u8("adjust_saturation", in, e) < 0)
		return -1;
	if (in->c != 3) {
		snprintf(e->msg, sizeof(e->msg),
			 "'adjust_saturation' needs 3 channels, but the image has %d",
			 in->c);
		snprintf(e->hint, sizeof(e->hint),
			 "decode(rgb), or drop adjust_saturation");
		return -1;
	}
	return 0;
}

static const struct ts_param p_hue[] = {
	{ .name = "hue_factor", .type = TS_PT_NUMBER, .positional = true,
	  .required = true, P_MIN(-0.5), P_MAX(0.5),
	  .doc = "turn of the hue circle, -0.5 to 0.5 (0 unchanged)" },
};

/* Hue, like saturation, means nothing to a gray image. */
static int shape_hue(const struct ts_op *op, const struct ts_shape *in,
		     struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	if (ts_registry_need_u8("adjust_hue", in, e) < 0)
		return -1;
	if (in->c != 3) {
		snprintf(e->msg, sizeof(e->msg),
			 "'adjust_hue' needs 3 channels, but the image has %d", in->c);
		snprintf(e->hint, sizeof(e->hint), "decode(rgb), or drop adjust_hue");
		return -1;
	}
	return 0;
}

static int build_factor(struct ts_check *c, const struct ts_opdef *def,
			struct ts_check_val *vals, const struct ts_ast_call *call,
			const struct ts_shape *in, struct ts_op *op)
{
	op->color.factor = ts_check_arg(def, vals, def->params[0].name)->num;
	return 0;
}

static void describe_brightness(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "adjust_brightness(brightness_factor=%g)", op->color.factor);
}

static void describe_contrast(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "adjust_contrast(contrast_factor=%g)", op->color.factor);
}

static void describe_hue(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "adjust_hue(hue_factor=%g)", op->color.factor);
}

static void describe_saturation(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "adjust_saturation(saturation_factor=%g)", op->color.factor);
}

/* ---- adjust_sharpness, adjust_gamma ---------------------------------- */

static const struct ts_param p_sharpness[] = {
	P_FACTOR("sharpness_factor", "0 blurred, 1 unchanged, 2 twice as sharp"),
};

static int shape_sharpness(const struct ts_op *op, const struct ts_shape *in,
			   struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	return ts_registry_need_u8("adjust_sharpness", in, e);
}

static void describe_sharpness(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "adjust_sharpness(sharpness_factor=%g)", op->color.factor);
}

static const struct ts_param p_gamma[] = {
	{ .name = "gamma", .type = TS_PT_NUMBER, .positional = true,
	  .required = true, P_MIN(0), P_MAX(1000),
	  .doc = "exponent, >= 0: below 1 brightens the shadows, above 1 darkens" },
	{ .name = "gain", .type = TS_PT_NUMBER, .positional = true, .def = "1",
	  .def_num = 1.0, P_MIN(0), P_MAX(255), .doc = "multiplier, after the power" },
};

static int build_gamma(struct ts_check *c, const struct ts_opdef *def,
		       struct ts_check_val *vals, const struct ts_ast_call *call,
		       const struct ts_shape *in, struct ts_op *op)
{
	op->color.gamma = ts_check_arg(def, vals, "gamma")->num;
	op->color.gain = ts_check_arg(def, vals, "gain")->num;
	return 0;
}

static void describe_gamma(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "adjust_gamma(gamma=%g, gain=%g)", op->color.gamma, op->color.gain);
}

/* ---- the rows -------------------------------------------------------- */

#define COLOR (TS_OPF_PIXELS | TS_OPF_UINT8)

const struct ts_opdef ts_ops_color[] = {
	{ TS_TRANSFORM(INVERT, p_prob_only, COLOR,
		       "255 - x, with probability p"),
	  .shape = shape_invert, .build = build_prob, .describe = describe_invert },
	{ TS_TRANSFORM(POSTERIZE, p_posterize, COLOR,
		       "keep the top bits of each channel, with probability p"),
	  .shape = shape_posterize, .build = build_posterize,
	  .describe = describe_posterize },
	{ TS_TRANSFORM(SOLARIZE, p_solarize, COLOR,
		       "invert the levels at or above threshold, with probability p"),
	  .shape = shape_solarize, .build = build_solarize,
	  .describe = describe_solarize },
	{ TS_TRANSFORM(AUTOCONTRAST, p_prob_only, COLOR,
		       "stretch each channel to 0..255, with probability p"),
	  .shape = shape_autocontrast, .build = build_prob,
	  .describe = describe_autocontrast },
	{ TS_TRANSFORM(EQUALIZE, p_prob_only, COLOR,
		       "equalize each channel's histogram, with probability p"),
	  .shape = shape_equalize, .build = build_prob, .describe = describe_equalize },
	{ TS_TRANSFORM(ADJUST_BRIGHTNESS, p_brightness,
		       COLOR, "blend with black by a fixed factor"),
	  .shape = shape_brightness, .build = build_factor,
	  .describe = describe_brightness },
	{ TS_TRANSFORM(ADJUST_CONTRAST, p_contrast, COLOR,
		       "blend with the mean gray by a fixed factor"),
	  .shape = shape_contrast, .build = build_factor,
	  .describe = describe_contrast },
	{ TS_TRANSFORM(ADJUST_SATURATION, p_saturation,
		       COLOR, "blend with the gray image by a fixed factor"),
	  .shape = shape_saturation, .build = build_factor,
	  .describe = describe_saturation },
	{ TS_TRANSFORM(ADJUST_HUE, p_hue, COLOR,
		       "turn the hue by a fixed fraction of the circle"),
	  .shape = shape_hue, .build = build_factor, .describe = describe_hue },
	{ TS_TRANSFORM(ADJUST_SHARPNESS, p_sharpness,
		       COLOR, "blend with the 3x3-smoothed image by a fixed factor"),
	  .shape = shape_sharpness, .build = build_factor,
	  .describe = describe_sharpness },
	{ TS_TRANSFORM(ADJUST_GAMMA, p_gamma, TS_OPF_PIXELS,
		       "gain * x ^ gamma on the 0..1 scale, by a table"),
	  .shape = ts_registry_shape_same, .build = build_gamma,
	  .describe = describe_gamma },
	TS_ROW_END,
};
