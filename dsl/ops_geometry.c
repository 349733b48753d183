/*
 * ops_geometry.c - the geometric operators of torchvision.transforms,
 * named and parameterised as torchvision names them: the deterministic
 * rotate, affine, pad and erase of its functional API, and the random
 * random_rotation, random_affine and random_perspective of its
 * RandomRotation, RandomAffine and RandomPerspective classes (the same
 * parameters, drawn as their get_params draw them).
 *
 * rotate, affine and the random ones sample uint8 pixels as Pillow does
 * (torchvision's path for PIL images); pad takes uint8 or uint16; erase
 * any nhwc data, after normalize too, where torchvision's RandomErasing
 * runs. Their kernels are in runtime/geometry.c, their matrices in
 * geom.c.
 */
#include "checker.h"
#include "geom.h"

#include <math.h>
#include <stdio.h>

static const char *const w_interp[] = {"nearest", "bilinear", "bicubic", NULL};

static enum ts_interp interp_of(int word)
{
	return word == 1 ? TS_INTERP_BILINEAR
	       : word == 2 ? TS_INTERP_BICUBIC : TS_INTERP_NEAREST;
}

static const char *interp_name(enum ts_interp i)
{
	return i == TS_INTERP_BILINEAR ? "bilinear"
	       : i == TS_INTERP_BICUBIC ? "bicubic" : "nearest";
}

#define P_INTERP(d, w) \
	{ .name = "interpolation", .type = TS_PT_WORD, .def = d, .def_word = w, \
	  .words = w_interp, .doc = "nearest, bilinear or bicubic, as PIL samples" }
#define P_FILL(hi) \
	{ .name = "fill", .type = TS_PT_NUMLIST, .def = "0", P_MIN(0), P_MAX(hi), \
	  .doc = "outside the image: one level, or one per channel" }
#define P_CENTER \
	{ .name = "center", .type = TS_PT_NUMLIST, P_MIN(-1e6), P_MAX(1e6), \
	  .doc = "[x, y] in pixels from the top left; default the centre" }

/* A fill (or erase value) is one number or one per channel, as
 * torchvision's _parse_fill takes it. */
static int fill_count(const char *name, const char *param, int n,
		      const struct ts_shape *in, struct ts_shape_err *e)
{
	if (n <= 1 || n == in->c)
		return 0;
	e->param = param;
	snprintf(e->msg, sizeof(e->msg),
		 "'%s' has %d %s values, but the image has %d channel%s", name, n,
		 param, in->c, ts_registry_plural(in->c));
	snprintf(e->hint, sizeof(e->hint),
		 "give one value for every channel, or %d", in->c);
	return -1;
}

/* The fill list into op (0 when not given). */
static void take_fill(const struct ts_check_val *v, struct ts_op *op)
{
	op->geo.n_fill = v->given && v->n_nums > 0 ? v->n_nums : 1;
	for (int i = 0; i < 4; i++)
		op->geo.fill[i] = v->given && i < v->n_nums ? v->dnums[i] : 0.0;
}

/* center = [x, y], when given. */
static int take_center(struct ts_check *c, const struct ts_check_val *v,
		       struct ts_op *op)
{
	if (!v->given || v->n_nums < 0)
		return 0;
	if (v->n_nums != 2) {
		ts_check_err(c, v->loc, "write it as [x, y]",
			     "parameter 'center' expects 2 numbers, got %d", v->n_nums);
		return -1;
	}
	op->geo.has_center = true;
	op->geo.center[0] = v->dnums[0];
	op->geo.center[1] = v->dnums[1];
	return 0;
}

static void fill_desc(const struct ts_op *op, char *buf, size_t n)
{
	size_t len = (size_t)snprintf(buf, n, op->geo.n_fill > 1 ? "[" : "");
	for (int i = 0; i < op->geo.n_fill && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%g", i ? ", " : "",
					op->geo.fill[i]);
	if (op->geo.n_fill > 1 && len < n)
		snprintf(buf + len, n - len, "]");
}

static void center_desc(const struct ts_op *op, char *buf, size_t n)
{
	if (op->geo.has_center)
		snprintf(buf, n, ", center=[%g, %g]", op->geo.center[0],
			 op->geo.center[1]);
	else
		buf[0] = 0;
}

/* ---- rotate ---------------------------------------------------------- */

static const struct ts_param p_rotate[] = {
	{ .name = "angle", .type = TS_PT_NUMBER, .positional = true, .required = true,
	  P_MIN(-1e6), P_MAX(1e6), .doc = "degrees, counter-clockwise" },
	P_INTERP("nearest", 0),
	{ .name = "expand", .type = TS_PT_BOOL, .def = "false", .def_num = 0,
	  .doc = "grow the output to hold the whole rotated image" },
	P_CENTER,
	P_FILL(255),
};

static int build_rotate(struct ts_check *c, const struct ts_opdef *def,
			struct ts_check_val *vals, const struct ts_ast_call *call,
			const struct ts_shape *in, struct ts_op *op)
{
	op->geo.angle = ts_check_arg(def, vals, "angle")->num;
	op->geo.interp = interp_of(ts_check_arg(def, vals, "interpolation")->word);
	op->geo.expand = ts_check_arg(def, vals, "expand")->num != 0;
	take_fill(ts_check_arg(def, vals, "fill"), op);
	return take_center(c, ts_check_arg(def, vals, "center"), op);
}

/* expand of a fixed-size image: the size Image.rotate computes. */
static int shape_rotate(const struct ts_op *op, const struct ts_shape *in,
			struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	if (op->geo.expand && in->h && in->w) {
		double m[6];
		int ow, oh;
		ts_geom_rotate(in->w, in->h, op->geo.angle,
			       op->geo.has_center ? op->geo.center : NULL, true, m,
			       &ow, &oh);
		out->w = ow;
		out->h = oh;
		if (ow < 1 || oh < 1 || ow > TS_REG_MAX_SIDE || oh > TS_REG_MAX_SIDE) {
			e->param = "expand";
			snprintf(e->msg, sizeof(e->msg),
				 "rotate(expand = true) of the %dx%d image makes it %dx%d",
				 in->w, in->h, ow, oh);
			snprintf(e->hint, sizeof(e->hint),
				 "rotate about the centre, or drop expand");
			out->w = in->w;
			out->h = in->h;
			return -1;
		}
	}
	if (ts_registry_need_u8("rotate", in, e) < 0)
		return -1;
	return fill_count("rotate", "fill", op->geo.n_fill, in, e);
}

static void describe_rotate(const struct ts_op *op, char *buf, size_t n)
{
	char f[64], ce[64];
	fill_desc(op, f, sizeof(f));
	center_desc(op, ce, sizeof(ce));
	snprintf(buf, n, "rotate(angle=%g, interpolation=%s, expand=%s%s, fill=%s)",
		 op->geo.angle, interp_name(op->geo.interp),
		 op->geo.expand ? "true" : "false", ce, f);
}

/* ---- affine ---------------------------------------------------------- */

static const struct ts_param p_affine[] = {
	{ .name = "angle", .type = TS_PT_NUMBER, .positional = true, .required = true,
	  P_MIN(-1e6), P_MAX(1e6), .doc = "rotation in degrees, clockwise" },
	{ .name = "translate", .type = TS_PT_NUMLIST, .positional = true,
	  .def = "[0, 0]", P_MIN(-1e6), P_MAX(1e6),
	  .doc = "[x, y] shift in pixels, after the rotation" },
	{ .name = "scale", .type = TS_PT_NUMBER, .positional = true, .def = "1",
	  .def_num = 1, P_MIN(0.001), P_MAX(1000), .doc = "overall scale, > 0" },
	{ .name = "shear", .type = TS_PT_NUMLIST, .positional = true, .def = "0",
	  P_MIN(-180), P_MAX(180),
	  .doc = "degrees: x, or [x, y] ([s] is [s, s])" },
	P_INTERP("nearest", 0),
	P_FILL(255),
	P_CENTER,
};

static int build_affine(struct ts_check *c, const struct ts_opdef *def,
			struct ts_check_val *vals, const struct ts_ast_call *call,
			const struct ts_shape *in, struct ts_op *op)
{
	const struct ts_check_val *t = ts_check_arg(def, vals, "translate");
	const struct ts_check_val *sh = ts_check_arg(def, vals, "shear");
	int rc = 0;
	op->geo.angle = ts_check_arg(def, vals, "angle")->num;
	op->geo.scale = ts_check_arg(def, vals, "scale")->num;
	op->geo.interp = interp_of(ts_check_arg(def, vals, "interpolation")->word);
	take_fill(ts_check_arg(def, vals, "fill"), op);
	if (t->given && t->n_nums >= 0) {
		if (t->n_nums != 2) {
			ts_check_err(c, t->loc, "write it as [x, y]",
				     "parameter 'translate' expects 2 numbers, got %d",
				     t->n_nums);
			rc = -1;
		} else {
			op->geo.translate[0] = t->dnums[0];
			op->geo.translate[1] = t->dnums[1];
		}
	}
	/* F.affine: a number s is [s, 0]; a list of one, [s, s] */
	if (sh->given && sh->n_nums > 0) {
		if (sh->n_nums > 2) {
			ts_check_err(c, sh->loc, "write it as s or [x, y]",
				     "parameter 'shear' expects 1 or 2 numbers, got %d",
				     sh->n_nums);
			rc = -1;
		} else {
			op->geo.shear[0] = sh->dnums[0];
			op->geo.shear[1] = sh->n_nums == 2 ? sh->dnums[1]
					   : sh->is_list ? sh->dnums[0] : 0.0;
		}
	}
	if (take_center(c, ts_check_arg(def, vals, "center"), op) < 0)
		rc = -1;
	return rc;
}

static int shape_affine(const struct ts_op *op, const struct ts_shape *in,
			struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	if (ts_registry_need_u8("affine", in, e) < 0)
		return -1;
	return fill_count("affine", "fill", op->geo.n_fill, in, e);
}

static void describe_affine(const struct ts_op *op, char *buf, size_t n)
{
	char f[64], ce[64];
	fill_desc(op, f, sizeof(f));
	center_desc(op, ce, sizeof(ce));
	snprintf(buf, n,
		 "affine(angle=%g, translate=[%g, %g], scale=%g, shear=[%g, %g], "
		 "interpolation=%s, fill=%s%s)",
		 op->geo.angle, op->geo.translate[0], op->geo.translate[1],
		 op->geo.scale, op->geo.shear[0], op->geo.shear[1],
		 interp_name(op->geo.interp), f, ce);
}

/* ---- pad ------------------------------------------------------------- */

static const char *const w_pad_mode[] = {"constant", "edge", "reflect", "symmetric", NULL};

static const struct ts_param p_pad[] = {
	{ .name = "padding", .type = TS_PT_NUMLIST, .positional = true,
	  .required = true, P_MIN(-TS_REG_MAX_SIDE), P_MAX(TS_REG_MAX_SIDE),
	  .doc = "pixels: every side, [left/right, top/bottom] or [left, top, right, bottom]" },
	{ .name = "fill", .type = TS_PT_NUMLIST, .positional = true, .def = "0",
	  P_MIN(0), P_MAX(65535),
	  .doc = "constant mode's level: one, or one per channel" },
	{ .name = "padding_mode", .type = TS_PT_WORD, .positional = true,
	  .def = "constant", .def_word = 0, .words = w_pad_mode,
	  .doc = "constant, edge, reflect or symmetric (as np.pad)" },
};

static int build_pad(struct ts_check *c, const struct ts_opdef *def,
		     struct ts_check_val *vals, const struct ts_ast_call *call,
		     const struct ts_shape *in, struct ts_op *op)
{
	const struct ts_check_val *p = ts_check_arg(def, vals, "padding");
	op->geo.pad_mode = (enum ts_pad_mode)ts_check_arg(def, vals, "padding_mode")->word;
	take_fill(ts_check_arg(def, vals, "fill"), op);
	if (p->n_nums < 0)
		return 0;
	for (int i = 0; i < p->n_nums; i++)
		if (p->dnums[i] != floor(p->dnums[i])) {
			ts_check_err(c, p->loc, NULL,
				     "parameter 'padding' expects whole pixels, got %g",
				     p->dnums[i]);
			return -1;
		}
	if (p->n_nums == 3) {
		ts_check_err(c, p->loc,
			     "give N, [left/right, top/bottom] or [left, top, right, bottom]",
			     "parameter 'padding' expects 1, 2 or 4 numbers, got 3");
		return -1;
	}
	const int *v = (const int[4]){ (int)p->dnums[0], (int)p->dnums[1],
				       (int)p->dnums[2], (int)p->dnums[3] };
	if (p->n_nums == 1) {
		for (int i = 0; i < 4; i++)
			op->geo.pad[i] = v[0];
	} else if (p->n_nums == 2) {
		op->geo.pad[0] = op->geo.pad[2] = v[0];
		op->geo.pad[1] = op->geo.pad[3] = v[1];
	} else {
		for (int i = 0; i < 4; i++)
			op->geo.pad[i] = v[i];
	}
	return 0;
}

static int shape_pad(const struct ts_op *op, const struct ts_shape *in,
		     struct ts_shape *out, struct ts_shape_err *e)
{
	const int *p = op->geo.pad;
	*out = *in;
	if (in->h && in->w) {
		const long w = (long)in->w + p[0] + p[2], h = (long)in->h + p[1] + p[3];
		const long cw = (long)in->w + (p[0] < 0 ? p[0] : 0) + (p[2] < 0 ? p[2] : 0);
		const long ch = (long)in->h + (p[1] < 0 ? p[1] : 0) + (p[3] < 0 ? p[3] : 0);
		if (cw < 1 || ch < 1 || w > TS_REG_MAX_SIDE || h > TS_REG_MAX_SIDE) {
			e->param = "padding";
			snprintf(e->msg, sizeof(e->msg),
				 "pad of the %dx%d image by [%d, %d, %d, %d] %s", in->w,
				 in->h, p[0], p[1], p[2], p[3],
				 cw < 1 || ch < 1 ? "crops all of it"
						  : "makes it too large");
			snprintf(e->hint, sizeof(e->hint),
				 "negative padding crops: keep it below the image size");
			return -1;
		}
		out->w = (int)w;
		out->h = (int)h;
	}
	if (op->geo.pad_mode == TS_PAD_CONSTANT && in->dtype == TS_DTYPE_U8)
		for (int i = 0; i < op->geo.n_fill; i++)
			if (op->geo.fill[i] > 255) {
				e->param = "fill";
				snprintf(e->msg, sizeof(e->msg),
					 "pad's fill %g is above 255, the largest uint8 level",
					 op->geo.fill[i]);
				snprintf(e->hint, sizeof(e->hint),
					 "give a level from 0 to 255");
				return -1;
			}
	return fill_count("pad", "fill", op->geo.n_fill, in, e);
}

static void describe_pad(const struct ts_op *op, char *buf, size_t n)
{
	char f[64];
	fill_desc(op, f, sizeof(f));
	snprintf(buf, n, "pad(padding=[%d, %d, %d, %d], fill=%s, padding_mode=%s)",
		 op->geo.pad[0], op->geo.pad[1], op->geo.pad[2], op->geo.pad[3], f,
		 w_pad_mode[op->geo.pad_mode]);
}

/* ---- erase ----------------------------------------------------------- */

#define P_BOX(n, d) \
	{ .name = n, .type = TS_PT_INT, .positional = true, .required = true, \
	  P_MIN(0), P_MAX(TS_REG_MAX_SIDE), .doc = d }

static const struct ts_param p_erase[] = {
	P_BOX("i", "top row of the box"),
	P_BOX("j", "left column of the box"),
	P_BOX("h", "height of the box"),
	P_BOX("w", "width of the box"),
	{ .name = "value", .type = TS_PT_NUMLIST, .positional = true, .def = "0",
	  P_MIN(-1e6), P_MAX(1e6),
	  .doc = "the box's value: one, or one per channel, in the data's units" },
};

static int build_erase(struct ts_check *c, const struct ts_opdef *def,
		       struct ts_check_val *vals, const struct ts_ast_call *call,
		       const struct ts_shape *in, struct ts_op *op)
{
	op->geo.erase_i = (int)ts_check_arg(def, vals, "i")->num;
	op->geo.erase_j = (int)ts_check_arg(def, vals, "j")->num;
	op->geo.erase_h = (int)ts_check_arg(def, vals, "h")->num;
	op->geo.erase_w = (int)ts_check_arg(def, vals, "w")->num;
	take_fill(ts_check_arg(def, vals, "value"), op);
	return 0;
}

/* Any nhwc data but float16 (made only by the output stage); integer
 * data takes whole levels in its range. */
static int shape_erase(const struct ts_op *op, const struct ts_shape *in,
		       struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	if (in->layout == TS_LAYOUT_NCHW || in->dtype == TS_DTYPE_F16) {
		snprintf(e->msg, sizeof(e->msg),
			 "'erase' works on nhwc uint8, uint16 or float32 data, but the data is %s %s here",
			 ts_dtype_name(in->dtype), in->layout == TS_LAYOUT_NCHW ? "nchw" : "nhwc");
		snprintf(e->hint, sizeof(e->hint), "move erase before to(...)");
		return -1;
	}
	if (in->dtype == TS_DTYPE_U8 || in->dtype == TS_DTYPE_U16) {
		const double hi = in->dtype == TS_DTYPE_U8 ? 255 : 65535;
		for (int i = 0; i < op->geo.n_fill; i++) {
			const double v = op->geo.fill[i];
			if (v < 0 || v > hi || v != floor(v)) {
				e->param = "value";
				snprintf(e->msg, sizeof(e->msg),
					 "erase's value %g is not a %s level (a whole number from 0 to %g)",
					 v, ts_dtype_name(in->dtype), hi);
				snprintf(e->hint, sizeof(e->hint),
					 "give a level, or erase after normalize in its units");
				return -1;
			}
		}
	}
	if ((in->h && op->geo.erase_i >= in->h) || (in->w && op->geo.erase_j >= in->w)) {
		e->param = op->geo.erase_i >= in->h && in->h ? "i" : "j";
		snprintf(e->msg, sizeof(e->msg),
			 "erase's box at row %d, column %d is outside the %dx%d image",
			 op->geo.erase_i, op->geo.erase_j, in->w, in->h);
		snprintf(e->hint, sizeof(e->hint), "i below %d and j below %d", in->h, in->w);
		return -1;
	}
	return fill_count("erase", "value", op->geo.n_fill, in, e);
}

static void describe_erase(const struct ts_op *op, char *buf, size_t n)
{
	char f[64];
	fill_desc(op, f, sizeof(f));
	snprintf(buf, n, "erase(i=%d, j=%d, h=%d, w=%d, value=%s)", op->geo.erase_i,
		 op->geo.erase_j, op->geo.erase_h, op->geo.erase_w, f);
}

/* ---- perspective ----------------------------------------------------- */

#define P_CORNERS(n, d) \
	{ .name = n, .type = TS_PT_NUMLIST, .positional = true, .required = true, \
	  .max_items = 8, P_MIN(-1e6), P_MAX(1e6), .doc = d }

static const struct ts_param p_perspective[] = {
	P_CORNERS("startpoints", "[x, y] x 4 of the input: top-left, top-right, bottom-right, bottom-left"),
	P_CORNERS("endpoints", "[x, y] x 4: where those corners go in the output"),
	P_INTERP("bilinear", 1),
	P_FILL(255),
};

static int take_corners(struct ts_check *c, const struct ts_check_val *v,
			const char *name, double out[8])
{
	if (v->n_nums < 0)
		return 0;
	if (v->n_nums != 8) {
		ts_check_err(c, v->loc,
			     "write the four corners' x and y in one list: [x0, y0, x1, y1, x2, y2, x3, y3]",
			     "parameter '%s' expects 8 numbers, got %d", name, v->n_nums);
		return -1;
	}
	for (int i = 0; i < 8; i++)
		out[i] = v->dnums[i];
	return 0;
}

static int build_perspective(struct ts_check *c, const struct ts_opdef *def,
			     struct ts_check_val *vals,
			     const struct ts_ast_call *call,
			     const struct ts_shape *in, struct ts_op *op)
{
	const struct ts_check_val *s = ts_check_arg(def, vals, "startpoints");
	const struct ts_check_val *e = ts_check_arg(def, vals, "endpoints");
	op->geo.interp = interp_of(ts_check_arg(def, vals, "interpolation")->word);
	take_fill(ts_check_arg(def, vals, "fill"), op);
	if (take_corners(c, s, "startpoints", op->geo.start) < 0 ||
	    take_corners(c, e, "endpoints", op->geo.end) < 0)
		return -1;
	double coef[8];
	if (s->n_nums == 8 && e->n_nums == 8 &&
	    ts_geom_perspective(op->geo.start, op->geo.end, coef) < 0) {
		ts_check_err(c, e->loc, "no three corners may lie on one line",
			     "perspective's corners do not make a quadrilateral");
		return -1;
	}
	return 0;
}

static int shape_perspective(const struct ts_op *op, const struct ts_shape *in,
			     struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	if (ts_registry_need_u8("perspective", in, e) < 0)
		return -1;
	return fill_count("perspective", "fill", op->geo.n_fill, in, e);
}

static void describe_perspective(const struct ts_op *op, char *buf, size_t n)
{
	const double *s = op->geo.start, *d = op->geo.end;
	char f[64];
	fill_desc(op, f, sizeof(f));
	snprintf(buf, n,
		 "perspective(startpoints=[%g, %g, %g, %g, %g, %g, %g, %g], "
		 "endpoints=[%g, %g, %g, %g, %g, %g, %g, %g], interpolation=%s, fill=%s)",
		 s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], d[0], d[1], d[2], d[3],
		 d[4], d[5], d[6], d[7], interp_name(op->geo.interp), f);
}

/* ---- random_rotation, random_affine ---------------------------------- */

/* degrees = d (>= 0) is [-d, d]; [lo, hi] as written (_setup_angle). */
static int take_degrees(struct ts_check *c, const struct ts_check_val *v,
			const char *name, double out[2])
{
	out[0] = out[1] = 0;
	if (v->n_nums < 0)
		return 0;
	if (v->n_nums == 1 && !v->is_list) {
		if (v->dnums[0] < 0) {
			ts_check_err(c, v->loc, "give [lo, hi] for a one-sided range",
				     "parameter '%s' must not be negative as one number, got %g",
				     name, v->dnums[0]);
			return -1;
		}
		out[0] = -v->dnums[0] + 0.0; /* -0 prints as 0 */
		out[1] = v->dnums[0];
		return 0;
	}
	if (v->n_nums != 2 || v->dnums[0] > v->dnums[1]) {
		ts_check_err(c, v->loc, "write it as d or [lo, hi] with lo <= hi",
			     "parameter '%s' expects one number or [lo, hi]", name);
		return -1;
	}
	out[0] = v->dnums[0];
	out[1] = v->dnums[1];
	return 0;
}

static const struct ts_param p_random_rotation[] = {
	{ .name = "degrees", .type = TS_PT_NUMLIST, .positional = true,
	  .required = true, P_MIN(-1e6), P_MAX(1e6),
	  .doc = "d: angle drawn from [-d, d]; or [lo, hi]" },
	P_INTERP("nearest", 0),
	{ .name = "expand", .type = TS_PT_BOOL, .def = "false", .def_num = 0,
	  .doc = "grow the output to hold the whole rotated image" },
	P_CENTER,
	P_FILL(255),
};

static int build_random_rotation(struct ts_check *c, const struct ts_opdef *def,
				 struct ts_check_val *vals,
				 const struct ts_ast_call *call,
				 const struct ts_shape *in, struct ts_op *op)
{
	int rc = take_degrees(c, ts_check_arg(def, vals, "degrees"), "degrees",
			      op->geo.degrees);
	op->geo.interp = interp_of(ts_check_arg(def, vals, "interpolation")->word);
	op->geo.expand = ts_check_arg(def, vals, "expand")->num != 0;
	take_fill(ts_check_arg(def, vals, "fill"), op);
	if (take_center(c, ts_check_arg(def, vals, "center"), op) < 0)
		rc = -1;
	return rc;
}

/* expand makes the size depend on the angle drawn. */
static int shape_random_rotation(const struct ts_op *op, const struct ts_shape *in,
				 struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	if (op->geo.expand)
		out->h = out->w = 0;
	if (ts_registry_need_u8("random_rotation", in, e) < 0)
		return -1;
	return fill_count("random_rotation", "fill", op->geo.n_fill, in, e);
}

static void describe_random_rotation(const struct ts_op *op, char *buf, size_t n)
{
	char f[64], ce[64];
	fill_desc(op, f, sizeof(f));
	center_desc(op, ce, sizeof(ce));
	snprintf(buf, n,
		 "random_rotation(degrees=[%g, %g], interpolation=%s, expand=%s%s, fill=%s)",
		 op->geo.degrees[0], op->geo.degrees[1], interp_name(op->geo.interp),
		 op->geo.expand ? "true" : "false", ce, f);
}

static const struct ts_param p_random_affine[] = {
	{ .name = "degrees", .type = TS_PT_NUMLIST, .positional = true,
	  .required = true, P_MIN(-1e6), P_MAX(1e6),
	  .doc = "d: angle drawn from [-d, d]; or [lo, hi]" },
	{ .name = "translate", .type = TS_PT_NUMLIST, .positional = true, P_MIN(0),
	  P_MAX(1), .doc = "[a, b]: |dx| up to a * width, |dy| up to b * height" },
	{ .name = "scale", .type = TS_PT_RANGE, .positional = true, P_MIN(0.001),
	  P_MAX(1000), .doc = "scale drawn from lo..hi" },
	{ .name = "shear", .type = TS_PT_NUMLIST, .positional = true, P_MIN(-180),
	  P_MAX(180),
	  .doc = "s: x shear from [-s, s]; [lo, hi]; or [xlo, xhi, ylo, yhi]" },
	P_INTERP("nearest", 0),
	P_FILL(255),
	P_CENTER,
};

static int build_random_affine(struct ts_check *c, const struct ts_opdef *def,
			       struct ts_check_val *vals,
			       const struct ts_ast_call *call,
			       const struct ts_shape *in, struct ts_op *op)
{
	const struct ts_check_val *t = ts_check_arg(def, vals, "translate");
	const struct ts_check_val *s = ts_check_arg(def, vals, "scale");
	const struct ts_check_val *sh = ts_check_arg(def, vals, "shear");
	int rc = take_degrees(c, ts_check_arg(def, vals, "degrees"), "degrees",
			      op->geo.degrees);
	op->geo.scale = 1.0;
	op->geo.interp = interp_of(ts_check_arg(def, vals, "interpolation")->word);
	take_fill(ts_check_arg(def, vals, "fill"), op);
	if (take_center(c, ts_check_arg(def, vals, "center"), op) < 0)
		rc = -1;
	if (t->given && t->n_nums >= 0) {
		if (t->n_nums != 2) {
			ts_check_err(c, t->loc, "write it as [a, b], fractions of width and height",
				     "parameter 'translate' expects 2 numbers, got %d",
				     t->n_nums);
			rc = -1;
		} else {
			op->geo.has_translate = true;
			op->geo.translate[0] = t->dnums[0];
			op->geo.translate[1] = t->dnums[1];
		}
	}
	if (s->given && !s->bad) {
		op->geo.has_scale = true;
		op->geo.scale_range[0] = s->lo;
		op->geo.scale_range[1] = s->hi;
	}
	if (sh->given && sh->n_nums > 0) {
		if (sh->n_nums == 1 && !sh->is_list) {
			double r[2];
			if (take_degrees(c, sh, "shear", r) < 0)
				return -1;
			op->geo.n_shear = 2;
			op->geo.shear_range[0] = r[0];
			op->geo.shear_range[1] = r[1];
		} else if (sh->n_nums == 2 || sh->n_nums == 4) {
			op->geo.n_shear = sh->n_nums;
			for (int i = 0; i < sh->n_nums; i++)
				op->geo.shear_range[i] = sh->dnums[i];
			for (int i = 0; i < sh->n_nums; i += 2)
				if (sh->dnums[i] > sh->dnums[i + 1]) {
					ts_check_err(c, sh->loc, "write the smaller end first",
						     "parameter 'shear' has an empty range: %g is above %g",
						     sh->dnums[i], sh->dnums[i + 1]);
					rc = -1;
				}
		} else {
			ts_check_err(c, sh->loc, "write it as s, [lo, hi] or [xlo, xhi, ylo, yhi]",
				     "parameter 'shear' expects 1, 2 or 4 numbers, got %d",
				     sh->n_nums);
			rc = -1;
		}
	}
	return rc;
}

static int shape_random_affine(const struct ts_op *op, const struct ts_shape *in,
			       struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	if (ts_registry_need_u8("random_affine", in, e) < 0)
		return -1;
	return fill_count("random_affine", "fill", op->geo.n_fill, in, e);
}

static void describe_random_affine(const struct ts_op *op, char *buf, size_t n)
{
	const struct ts_op_geometry *g = &op->geo;
	char f[64], ce[64], t[64] = "none", s[64] = "none", sh[96] = "none";
	fill_desc(op, f, sizeof(f));
	center_desc(op, ce, sizeof(ce));
	if (g->has_translate)
		snprintf(t, sizeof(t), "[%g, %g]", g->translate[0], g->translate[1]);
	if (g->has_scale)
		snprintf(s, sizeof(s), "%g..%g", g->scale_range[0], g->scale_range[1]);
	if (g->n_shear == 2)
		snprintf(sh, sizeof(sh), "[%g, %g]", g->shear_range[0], g->shear_range[1]);
	else if (g->n_shear == 4)
		snprintf(sh, sizeof(sh), "[%g, %g, %g, %g]", g->shear_range[0],
			 g->shear_range[1], g->shear_range[2], g->shear_range[3]);
	snprintf(buf, n,
		 "random_affine(degrees=[%g, %g], translate=%s, scale=%s, shear=%s, "
		 "interpolation=%s, fill=%s%s)",
		 g->degrees[0], g->degrees[1], t, s, sh, interp_name(op->geo.interp), f, ce);
}

/* ---- random_perspective ---------------------------------------------- */

static const struct ts_param p_random_perspective[] = {
	{ .name = "distortion_scale", .type = TS_PT_NUMBER, .positional = true,
	  .def = "0.5", .def_num = 0.5, P_MIN(0), P_MAX(1),
	  .doc = "how far the corners move, 0 to 1 of half the side" },
	{ .name = "p", .type = TS_PT_NUMBER, .positional = true, .def = "0.5",
	  .def_num = 0.5, P_MIN(0), P_MAX(1), .doc = "probability of applying it" },
	P_INTERP("bilinear", 1),
	P_FILL(255),
};

static int build_random_perspective(struct ts_check *c, const struct ts_opdef *def,
				    struct ts_check_val *vals,
				    const struct ts_ast_call *call,
				    const struct ts_shape *in, struct ts_op *op)
{
	op->geo.distortion = ts_check_arg(def, vals, "distortion_scale")->num;
	op->geo.p = ts_check_arg(def, vals, "p")->num;
	op->geo.interp = interp_of(ts_check_arg(def, vals, "interpolation")->word);
	take_fill(ts_check_arg(def, vals, "fill"), op);
	return 0;
}

static int shape_random_perspective(const struct ts_op *op, const struct ts_shape *in,
				    struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	if (ts_registry_need_u8("random_perspective", in, e) < 0)
		return -1;
	return fill_count("random_perspective", "fill", op->geo.n_fill, in, e);
}

static void describe_random_perspective(const struct ts_op *op, char *buf, size_t n)
{
	char f[64];
	fill_desc(op, f, sizeof(f));
	snprintf(buf, n,
		 "random_perspective(distortion_scale=%g, p=%g, interpolation=%s, fill=%s)",
		 op->geo.distortion, op->geo.p, interp_name(op->geo.interp), f);
}

/* ---- the rows -------------------------------------------------------- */

#define SAMPLED (TS_OPF_PIXELS | TS_OPF_UINT8)

const struct ts_opdef ts_ops_geometry[] = {
	{ TS_TRANSFORM(ROTATE, p_rotate, SAMPLED,
		       "rotate by a fixed angle, as F.rotate"),
	  .shape = shape_rotate, .build = build_rotate, .describe = describe_rotate },
	{ TS_TRANSFORM(AFFINE, p_affine, SAMPLED,
		       "rotate, translate, scale and shear, as F.affine"),
	  .shape = shape_affine, .build = build_affine, .describe = describe_affine },
	{ TS_TRANSFORM(PAD, p_pad, TS_OPF_PIXELS,
		       "pad (or crop, when negative) each side, as F.pad"),
	  .shape = shape_pad, .build = build_pad, .describe = describe_pad },
	{ TS_TRANSFORM(ERASE, p_erase, 0,
		       "set a box to a value, as F.erase"),
	  .shape = shape_erase, .build = build_erase, .describe = describe_erase },
	{ TS_TRANSFORM(PERSPECTIVE, p_perspective, SAMPLED,
		       "move the four corners, as F.perspective"),
	  .shape = shape_perspective, .build = build_perspective,
	  .describe = describe_perspective },
	{ TS_TRANSFORM(RANDOM_ROTATION, p_random_rotation,
		       SAMPLED, "rotate by a random angle, as RandomRotation"),
	  .shape = shape_random_rotation, .build = build_random_rotation,
	  .describe = describe_random_rotation },
	{ TS_TRANSFORM(RANDOM_AFFINE, p_random_affine, SAMPLED,
		       "a random affine map, as RandomAffine"),
	  .shape = shape_random_affine, .build = build_random_affine,
	  .describe = describe_random_affine },
	{ TS_TRANSFORM(RANDOM_PERSPECTIVE, p_random_perspective, SAMPLED,
		       "move the corners at random, with probability p, as RandomPerspective"),
	  .shape = shape_random_perspective, .build = build_random_perspective,
	  .describe = describe_random_perspective },
	TS_ROW_END,
};
