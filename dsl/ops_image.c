/*
 * ops_image.c - the image operators, one block each: parameters, shape
 * rule, how the bound arguments build the op, how `tsrun graph` describes
 * it, and its registry row (at the end, in documentation order). Their
 * kernels are in runtime/augment.c and runtime/output.c (and the decoders
 * for decode).
 */
#include "checker.h"

#include <stdio.h>
#include <string.h>

static const char *interp_name(enum ts_interp i)
{
	switch (i) {
	case TS_INTERP_AREA: return "area";
	case TS_INTERP_NEAREST: return "nearest";
	case TS_INTERP_BICUBIC: return "bicubic";
	case TS_INTERP_LANCZOS: return "lanczos";
	default: return "bilinear";
	}
}

/* In enum ts_interp's order. */
static const char *const w_interp[] = {"bilinear", "area", "nearest", "bicubic",
				       "lanczos", NULL};

/* resize and random_resized_crop resample alike (augment_resize.c), with
 * torchvision's names and defaults: interpolation (interp, the name it had
 * first, still taken) and antialias, true as PIL always is. */
#define P_INTERPOLATION \
	{ .name = "interpolation", .alias = "interp", .type = TS_PT_WORD, \
	  .def = "bilinear", .def_word = 0, .words = w_interp, \
	  .doc = "bilinear, area, nearest, bicubic or lanczos, as PIL resamples" }
#define P_ANTIALIAS \
	{ .name = "antialias", .type = TS_PT_BOOL, .def = "true", .def_num = 1, \
	  .doc = "low-pass filter when shrinking (PIL's, always on there)" }

/* ---- decode ---------------------------------------------------------- */

static const char *const w_color[] = {"rgb", "gray", NULL};

static const struct ts_param p_decode[] = {
	{ .name = "color", .type = TS_PT_WORD, .positional = true, .def = "rgb",
	  .def_word = 0, .words = w_color, .doc = "output colour: rgb (3 channels) or gray (1)" },
	{ .name = "depth", .type = TS_PT_INT, .def = "8", .def_num = 8, P_MIN(8),
	  P_MAX(16), .doc = "bits per channel: 8 (uint8) or 16 (uint16)" },
};

static int shape_decode(const struct ts_op *op, const struct ts_shape *in,
			struct ts_shape *out, struct ts_shape_err *e)
{
	*out = (struct ts_shape){ .c = op->decode.color == TS_COLOR_RGB ? 3 : 1,
				  .dtype = op->decode.depth == 16 ? TS_DTYPE_U16 : TS_DTYPE_U8,
				  .layout = TS_LAYOUT_NHWC };
	if (!in->encoded) {
		snprintf(e->msg, sizeof(e->msg),
			 "'decode' needs encoded image bytes, but the images here are already decoded");
		snprintf(e->hint, sizeof(e->hint),
			 "remove decode: synthetic() yields decoded pixels");
		*out = *in;
		return -1;
	}
	return 0;
}

static int build_decode(struct ts_check *c, const struct ts_opdef *def,
			struct ts_check_val *vals, const struct ts_ast_call *call,
			const struct ts_shape *in, struct ts_op *op)
{
	const struct ts_check_val *depth = ts_check_arg(def, vals, "depth");
	op->decode.color = ts_check_arg(def, vals, "color")->word == 1 ? TS_COLOR_GRAY
								: TS_COLOR_RGB;
	op->decode.depth = (int)depth->num;
	if (op->decode.depth != 8 && op->decode.depth != 16) {
		ts_check_err(c, depth->loc, NULL,
			     "parameter 'depth' must be 8 or 16, got %d", op->decode.depth);
		op->decode.depth = 8;
		return -1;
	}
	return 0;
}

static void describe_decode(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "decode(%s, depth=%d)",
		 op->decode.color == TS_COLOR_GRAY ? "gray" : "rgb", op->decode.depth);
}

/* ---- resize ---------------------------------------------------------- */

static const struct ts_param p_resize[] = {
	P_SIZE("shorter side N, or exactly [h, w]"),
	P_INTERPOLATION,
	P_ANTIALIAS,
	{ .name = "max_size", .type = TS_PT_INT, P_MIN(2), P_MAX(TS_REG_MAX_SIDE),
	  .doc = "resize(N) only: the longer side at most this, above N" },
};

/* torchvision's Resize(int): the shorter side becomes size, the longer
 * keeps the aspect ratio (truncated); with max_size, a longer side above
 * it becomes max_size and the shorter int(max_size * N / long), as
 * _compute_resized_output_size does. Unknown when the input varies. */
static int shape_resize(const struct ts_op *op, const struct ts_shape *in,
			struct ts_shape *out, struct ts_shape_err *e)
{
	int rc = 0;

	*out = *in;
	if (op->resize.size_w) {
		out->h = op->resize.size_h;
		out->w = op->resize.size_w;
	} else if (in->h && in->w) {
		long long side = (long long)op->resize.size_h *
				 (in->h <= in->w ? in->w : in->h) /
				 (in->h <= in->w ? in->h : in->w);
		if (side > TS_REG_MAX_SIDE) {
			e->param = "size";
			snprintf(e->msg, sizeof(e->msg),
				 "resize(%d) of the %dx%d image makes its longer side %lld, above %d",
				 op->resize.size_h, in->h, in->w, side, TS_REG_MAX_SIDE);
			snprintf(e->hint, sizeof(e->hint),
				 "resize to an exact [h, w] instead");
			side = TS_REG_MAX_SIDE;
			rc = -1;
		}
		long long shorter = op->resize.size_h;
		if (op->resize.max_size && side > op->resize.max_size) {
			shorter = (long long)((double)((long long)op->resize.max_size * shorter) /
					      (double)side);
			shorter = shorter < 1 ? 1 : shorter;
			side = op->resize.max_size;
		}
		if (in->h <= in->w) {
			out->h = (int)shorter;
			out->w = (int)side;
		} else {
			out->w = (int)shorter;
			out->h = (int)side;
		}
	} else {
		out->h = out->w = 0;
	}
	return rc;
}

static int build_resize(struct ts_check *c, const struct ts_opdef *def,
			struct ts_check_val *vals, const struct ts_ast_call *call,
			const struct ts_shape *in, struct ts_op *op)
{
	int rc = ts_check_arg_size(c, def, vals, &op->resize.size_h, &op->resize.size_w);
	/* resize(N): shorter side; resize([h, w]) or resize(h, w): exact */
	if (ts_check_arg(def, vals, "size")->num >= 0 &&
	    !ts_check_arg(def, vals, "width")->given)
		op->resize.size_w = 0;
	op->resize.interp = (enum ts_interp)ts_check_arg(def, vals, "interpolation")->word;
	op->resize.antialias = ts_check_arg(def, vals, "antialias")->num != 0;
	const struct ts_check_val *m = ts_check_arg(def, vals, "max_size");
	if (m->given && !m->bad && rc == 0) {
		op->resize.max_size = (int)m->num;
		if (op->resize.size_w) {
			ts_check_err(c, m->loc, "write resize(N, max_size = M), or drop max_size",
				     "parameter 'max_size' bounds resize(N) only, not an exact "
				     "[h, w]");
			op->resize.max_size = 0;
			rc = -1;
		} else if (op->resize.max_size <= op->resize.size_h) {
			char hint[192];
			snprintf(hint, sizeof(hint), "give a max_size above %d, or drop it",
				 op->resize.size_h);
			ts_check_err(c, m->loc, hint,
				     "parameter 'max_size' must be above the size %d, got %d",
				     op->resize.size_h, op->resize.max_size);
			op->resize.max_size = 0;
			rc = -1;
		}
	}
	return rc;
}

static void describe_resize(const struct ts_op *op, char *buf, size_t n)
{
	char a[48];

	if (op->resize.size_w)
		snprintf(a, sizeof(a), "[%d, %d]", op->resize.size_h, op->resize.size_w);
	else
		snprintf(a, sizeof(a), "%d", op->resize.size_h);
	if (op->resize.max_size)
		snprintf(a + strlen(a), sizeof(a) - strlen(a), ", max_size=%d", op->resize.max_size);
	snprintf(buf, n, "resize(%s, interpolation=%s, antialias=%s)", a,
		 interp_name(op->resize.interp), op->resize.antialias ? "true" : "false");
}

/* ---- center_crop, random_crop, random_resized_crop ------------------- */

/* A crop of size_h x size_w out of in, which may first be padded by pad
 * on each side: larger than the (known) input is an error. */
static int shape_crop(const struct ts_op *op, const struct ts_shape *in,
		      struct ts_shape *out, struct ts_shape_err *e, int pad)
{
	*out = *in;
	out->h = op->crop.size_h;
	out->w = op->crop.size_w;
	if (in->h && in->w &&
	    (in->h + pad < op->crop.size_h || in->w + pad < op->crop.size_w)) {
		e->param = "size";
		snprintf(e->msg, sizeof(e->msg),
			 "crop %dx%d is larger than the %dx%d image",
			 op->crop.size_h, op->crop.size_w, in->h, in->w);
		snprintf(e->hint, sizeof(e->hint),
			 "crop at most %dx%d, or resize first",
			 in->h + pad, in->w + pad);
		return -1;
	}
	return 0;
}

static const struct ts_param p_center_crop[] = {
	P_SIZE("output N x N, or [h, w]"),
};

static int shape_center_crop(const struct ts_op *op, const struct ts_shape *in,
			     struct ts_shape *out, struct ts_shape_err *e)
{
	return shape_crop(op, in, out, e, 0);
}

static int build_center_crop(struct ts_check *c, const struct ts_opdef *def,
			     struct ts_check_val *vals,
			     const struct ts_ast_call *call,
			     const struct ts_shape *in, struct ts_op *op)
{
	return ts_check_arg_size(c, def, vals, &op->crop.size_h, &op->crop.size_w);
}

static void describe_center_crop(const struct ts_op *op, char *buf, size_t n)
{
	char a[48];

	ts_registry_size_desc(op->crop.size_h, op->crop.size_w, a, sizeof(a));
	snprintf(buf, n, "center_crop(%s)", a);
}

static const struct ts_param p_random_crop[] = {
	P_SIZE("output N x N, or [h, w]"),
	{ .name = "padding", .type = TS_PT_INT, .def = "0", .def_num = 0, P_MIN(0),
	  P_MAX(4096), .doc = "zero border added on each side before cropping" },
};

static int shape_random_crop(const struct ts_op *op, const struct ts_shape *in,
			     struct ts_shape *out, struct ts_shape_err *e)
{
	return shape_crop(op, in, out, e, 2 * op->crop.padding);
}

static int build_random_crop(struct ts_check *c, const struct ts_opdef *def,
			     struct ts_check_val *vals,
			     const struct ts_ast_call *call,
			     const struct ts_shape *in, struct ts_op *op)
{
	int rc = ts_check_arg_size(c, def, vals, &op->crop.size_h, &op->crop.size_w);
	op->crop.padding = (int)ts_check_arg(def, vals, "padding")->num;
	return rc;
}

static void describe_random_crop(const struct ts_op *op, char *buf, size_t n)
{
	char a[48];

	ts_registry_size_desc(op->crop.size_h, op->crop.size_w, a, sizeof(a));
	snprintf(buf, n, "random_crop(%s, padding=%d)", a, op->crop.padding);
}

static const struct ts_param p_rrc[] = {
	P_SIZE("output N x N, or [h, w]"),
	{ .name = "scale", .type = TS_PT_RANGE, .def = "0.08..1.0",
	  .def_lo = 0.08, .def_hi = 1.0, P_MIN(0), P_MAX(1),
	  .doc = "crop area as a fraction of the image area" },
	{ .name = "ratio", .type = TS_PT_RANGE, .def = "3/4..4/3",
	  .def_lo = 3.0 / 4.0, .def_hi = 4.0 / 3.0, P_MIN(0.01), P_MAX(100),
	  .doc = "crop aspect ratio (width / height), drawn log-uniformly" },
	P_INTERPOLATION,
	P_ANTIALIAS,
};

/* Any area of any image resizes to size: no check against the input. */
static int shape_rrc(const struct ts_op *op, const struct ts_shape *in,
		     struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	out->h = op->crop.size_h;
	out->w = op->crop.size_w;
	return 0;
}

static int build_rrc(struct ts_check *c, const struct ts_opdef *def,
		     struct ts_check_val *vals, const struct ts_ast_call *call,
		     const struct ts_shape *in, struct ts_op *op)
{
	int rc = ts_check_arg_size(c, def, vals, &op->crop.size_h, &op->crop.size_w);
	op->crop.scale_lo = ts_check_arg(def, vals, "scale")->lo;
	op->crop.scale_hi = ts_check_arg(def, vals, "scale")->hi;
	op->crop.ratio_lo = ts_check_arg(def, vals, "ratio")->lo;
	op->crop.ratio_hi = ts_check_arg(def, vals, "ratio")->hi;
	/* Its own: the resample reads both (box_random_resized_crop), and a
	 * crop left at the zeroed op's antialias = false is not
	 * torchvision's (PIL antialiases every shrink). */
	op->crop.interp = (enum ts_interp)ts_check_arg(def, vals, "interpolation")->word;
	op->crop.antialias = ts_check_arg(def, vals, "antialias")->num != 0;
	if (op->crop.scale_hi <= 0) {
		ts_check_err(c, ts_check_arg(def, vals, "scale")->loc, NULL,
			     "parameter 'scale' must allow a crop larger than 0");
		rc = -1;
	}
	return rc;
}

static void describe_rrc(const struct ts_op *op, char *buf, size_t n)
{
	char a[48];

	ts_registry_size_desc(op->crop.size_h, op->crop.size_w, a, sizeof(a));
	snprintf(buf, n,
		 "random_resized_crop(%s, scale=%.4g..%.4g, ratio=%.4g..%.4g, "
		 "interpolation=%s, antialias=%s)",
		 a, op->crop.scale_lo, op->crop.scale_hi, op->crop.ratio_lo, op->crop.ratio_hi,
		 interp_name(op->crop.interp), op->crop.antialias ? "true" : "false");
}

/* ---- flip ------------------------------------------------------------ */

static const char *const w_dir[] = {"horizontal", "vertical", NULL};

static const struct ts_param p_flip[] = {
	{ .name = "direction", .type = TS_PT_WORD, .positional = true,
	  .def = "horizontal", .def_word = 0, .words = w_dir,
	  .doc = "horizontal (mirror left-right) or vertical" },
	{ .name = "p", .type = TS_PT_NUMBER, .def = "0.5", .def_num = 0.5, P_MIN(0),
	  P_MAX(1), .doc = "probability of flipping" },
};

static int build_flip(struct ts_check *c, const struct ts_opdef *def,
		      struct ts_check_val *vals, const struct ts_ast_call *call,
		      const struct ts_shape *in, struct ts_op *op)
{
	op->flip.horizontal = ts_check_arg(def, vals, "direction")->word == 0;
	op->flip.p = ts_check_arg(def, vals, "p")->num;
	return 0;
}

static void describe_flip(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "flip(%s, p=%g)",
		 op->flip.horizontal ? "horizontal" : "vertical", op->flip.p);
}

/* ---- color_jitter ---------------------------------------------------- */

static const struct ts_param p_color_jitter[] = {
	{ .name = "brightness", .type = TS_PT_NUMBER, .positional = true,
	  .def = "0", P_MIN(0), P_MAX(1),
	  .doc = "factor drawn from [1-b, 1+b]" },
	{ .name = "contrast", .type = TS_PT_NUMBER, .positional = true, .def = "0",
	  P_MIN(0), P_MAX(1), .doc = "factor drawn from [1-c, 1+c]" },
	{ .name = "saturation", .type = TS_PT_NUMBER, .positional = true,
	  .def = "0", P_MIN(0), P_MAX(1),
	  .doc = "factor drawn from [1-s, 1+s]" },
	{ .name = "hue", .type = TS_PT_NUMBER, .positional = true, .def = "0",
	  P_MIN(0), P_MAX(0.5), .doc = "hue turn drawn from [-h, h]" },
};

static int shape_color_jitter(const struct ts_op *op, const struct ts_shape *in,
			      struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	const char *colour = op->jitter.saturation > 0 ? "saturation"
			     : op->jitter.hue > 0 ? "hue" : NULL;
	if (colour && in->c != 3) {
		e->param = colour;
		snprintf(e->msg, sizeof(e->msg),
			 "%s needs 3 channels, but the image has %d", colour,
			 in->c);
		snprintf(e->hint, sizeof(e->hint),
			 "drop %s, or decode(rgb)", colour);
		return -1;
	}
	if (op->jitter.hue > 0 && in->dtype != TS_DTYPE_U8) {
		e->param = "hue";
		snprintf(e->msg, sizeof(e->msg),
			 "hue works on uint8 pixels, but the data is %s here",
			 ts_dtype_name(in->dtype));
		snprintf(e->hint, sizeof(e->hint),
			 "decode with depth = 8, or drop hue");
		return -1;
	}
	return 0;
}

static int build_color_jitter(struct ts_check *c, const struct ts_opdef *def,
			      struct ts_check_val *vals,
			      const struct ts_ast_call *call,
			      const struct ts_shape *in, struct ts_op *op)
{
	op->jitter.brightness = ts_check_arg(def, vals, "brightness")->num;
	op->jitter.contrast = ts_check_arg(def, vals, "contrast")->num;
	op->jitter.saturation = ts_check_arg(def, vals, "saturation")->num;
	op->jitter.hue = ts_check_arg(def, vals, "hue")->num;
	return 0;
}

static void describe_color_jitter(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "color_jitter(brightness=%g, contrast=%g, saturation=%g, hue=%g)",
		 op->jitter.brightness, op->jitter.contrast, op->jitter.saturation, op->jitter.hue);
}

/* ---- grayscale ------------------------------------------------------- */

static const struct ts_param p_grayscale[] = {
	{ .name = "channels", .type = TS_PT_INT, .positional = true, .def = "1",
	  .def_num = 1, P_MIN(1), P_MAX(3), .doc = "output channels: 1 or 3" },
	{ .name = "p", .type = TS_PT_NUMBER, .def = "1.0", .def_num = 1.0, P_MIN(0),
	  P_MAX(1), .doc = "probability of converting" },
};

static int shape_grayscale(const struct ts_op *op, const struct ts_shape *in,
			   struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	out->c = op->gray.channels;
	if (op->gray.p < 1.0 && op->gray.channels != in->c) {
		e->param = "p";
		snprintf(e->msg, sizeof(e->msg),
			 "grayscale with p < 1 must keep the channel count (%d), "
			 "or samples would differ in shape", in->c);
		snprintf(e->hint, sizeof(e->hint),
			 "use grayscale(channels = %d, p = %g)", in->c, op->gray.p);
		return -1;
	}
	return 0;
}

static int build_grayscale(struct ts_check *c, const struct ts_opdef *def,
			   struct ts_check_val *vals,
			   const struct ts_ast_call *call,
			   const struct ts_shape *in, struct ts_op *op)
{
	const struct ts_check_val *ch = ts_check_arg(def, vals, "channels");
	op->gray.channels = (int)ch->num;
	op->gray.p = ts_check_arg(def, vals, "p")->num;
	if (op->gray.channels != 1 && op->gray.channels != 3) {
		ts_check_err(c, ch->loc, NULL,
			     "parameter 'channels' must be 1 or 3, got %d",
			     op->gray.channels);
		op->gray.channels = 1;
		return -1;
	}
	return 0;
}

static void describe_grayscale(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "grayscale(channels=%d, p=%g)", op->gray.channels, op->gray.p);
}

/* ---- normalize ------------------------------------------------------- */

static const struct ts_param p_normalize[] = {
	{ .name = "mean", .type = TS_PT_NUMLIST, .positional = true,
	  .required = true, P_MIN(-1000), P_MAX(1000),
	  .doc = "per-channel mean, on the 0..1 scale" },
	{ .name = "std", .type = TS_PT_NUMLIST, .positional = true,
	  .required = true, P_MIN(1e-6), P_MAX(1000),
	  .doc = "per-channel standard deviation, > 0" },
};

/* n_mean < 0: the lists were reported already; no channel check then. */
static int shape_normalize(const struct ts_op *op, const struct ts_shape *in,
			   struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	out->dtype = TS_DTYPE_F32;
	out->normalized = true;
	if (op->norm.n_mean >= 0 && op->norm.n_mean != in->c) {
		e->param = "mean";
		snprintf(e->msg, sizeof(e->msg),
			 "normalize has %d mean and std value%s, but the image has %d channel%s",
			 op->norm.n_mean, ts_registry_plural(op->norm.n_mean), in->c,
			 ts_registry_plural(in->c));
		snprintf(e->hint, sizeof(e->hint),
			 "give %d value%s to mean and std%s", in->c,
			 ts_registry_plural(in->c),
			 in->c == 1 ? ", or decode(rgb) for 3 channels" : "");
		return -1;
	}
	return 0;
}

static int build_normalize(struct ts_check *c, const struct ts_opdef *def,
			   struct ts_check_val *vals,
			   const struct ts_ast_call *call,
			   const struct ts_shape *in, struct ts_op *op)
{
	const struct ts_check_val *mean = ts_check_arg(def, vals, "mean");
	const struct ts_check_val *std = ts_check_arg(def, vals, "std");
	if (mean->n_nums < 0 || std->n_nums < 0) {
		op->norm.n_mean = -1; /* already reported */
		return 0;
	}
	if (mean->n_nums != std->n_nums) {
		ts_check_mean_std_counts(c, "normalize", mean, std, in);
		op->norm.n_mean = -1; /* reported: no channel check */
		return -1;
	}
	op->norm.n_mean = mean->n_nums;
	for (int i = 0; i < 4; i++) {
		op->norm.mean[i] = i < mean->n_nums ? mean->nums[i] : 0.0f;
		op->norm.std[i] = i < std->n_nums ? std->nums[i] : 1.0f;
	}
	return 0;
}

static void list_desc(const float *v, int n, char *buf, size_t len)
{
	size_t at = (size_t)snprintf(buf, len, "[");
	for (int i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%g", i ? ", " : "",
				       (double)v[i]);
	if (at < len)
		snprintf(buf + at, len - at, "]");
}

static void describe_normalize(const struct ts_op *op, char *buf, size_t n)
{
	char a[48], b[48];

	list_desc(op->norm.mean, op->norm.n_mean, a, sizeof(a));
	list_desc(op->norm.std, op->norm.n_mean, b, sizeof(b));
	snprintf(buf, n, "normalize(mean=%s, std=%s)", a, b);
}

/* ---- to -------------------------------------------------------------- */

static const char *const w_dtype[] = {"uint8", "uint16", "float16", "float32",
				      NULL};
static const char *const w_layout[] = {"nhwc", "nchw", NULL};

static const struct ts_param p_to[] = {
	{ .name = "dtype", .type = TS_PT_WORD, .positional = true,
	  .required = true, .words = w_dtype, .doc = "element type" },
	{ .name = "layout", .type = TS_PT_WORD, .positional = true, .def = "nhwc",
	  .def_word = 0, .words = w_layout, .doc = "memory layout of a sample" },
};

static int shape_to(const struct ts_op *op, const struct ts_shape *in,
		    struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	out->dtype = op->to.dtype;
	out->layout = op->to.layout;
	return 0;
}

static int build_to(struct ts_check *c, const struct ts_opdef *def,
		    struct ts_check_val *vals, const struct ts_ast_call *call,
		    const struct ts_shape *in, struct ts_op *op)
{
	op->to.dtype = (enum ts_dtype)ts_check_arg(def, vals, "dtype")->word;
	op->to.layout = (enum ts_layout)ts_check_arg(def, vals, "layout")->word;
	return 0;
}

/* The output stage always ends in a to; lowering adds it (index < 0)
 * when the pipeline has none. */
static void describe_to(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "to(%s, %s)%s", ts_dtype_name(op->to.dtype),
		 ts_layout_name(op->to.layout), op->index < 0 ? " (implicit)" : "");
}

/* ---- the rows -------------------------------------------------------- */

#define CROP (TS_OPF_PIXELS | TS_OPF_FUSE_DECODE)

bool ts_ops_image_is_to(const struct ts_op *op)
{
	return op->kind == TS_OP_TO;
}

const struct ts_opdef ts_ops_image[] = {
	{ TS_TRANSFORM(DECODE, p_decode, TS_OPF_ENCODED,
		       "JPEG or PNG bytes to pixels"),
	  .shape = shape_decode, .build = build_decode, .describe = describe_decode },
	{ TS_TRANSFORM(RESIZE, p_resize,
		       CROP | TS_OPF_FUSE_OUTPUT | TS_OPF_GEOMETRY,
		       "scale the shorter side to N, or to exactly [h, w]"),
	  .shape = shape_resize, .build = build_resize, .describe = describe_resize },
	{ TS_TRANSFORM(CENTER_CROP, p_center_crop,
		       CROP | TS_OPF_FUSE_OUTPUT | TS_OPF_GEOMETRY, "crop the centre"),
	  .shape = shape_center_crop, .build = build_center_crop,
	  .describe = describe_center_crop },
	{ TS_TRANSFORM(RANDOM_CROP, p_random_crop, CROP,
		       "crop at a random position"),
	  .shape = shape_random_crop, .build = build_random_crop,
	  .describe = describe_random_crop },
	{ TS_TRANSFORM(RANDOM_RESIZED_CROP, p_rrc, CROP,
		       "crop a random area and aspect ratio, resize it to size"),
	  .shape = shape_rrc, .build = build_rrc, .describe = describe_rrc },
	{ TS_TRANSFORM(FLIP, p_flip,
		       TS_OPF_PIXELS | TS_OPF_FUSE_OUTPUT, "mirror with probability p"),
	  .shape = ts_registry_shape_same, .build = build_flip, .describe = describe_flip },
	{ TS_TRANSFORM(COLOR_JITTER, p_color_jitter,
		       TS_OPF_PIXELS, "random brightness, contrast, saturation and hue"),
	  .shape = shape_color_jitter, .build = build_color_jitter,
	  .describe = describe_color_jitter },
	{ TS_TRANSFORM(GRAYSCALE, p_grayscale, TS_OPF_PIXELS,
		       "convert to luma, with probability p"),
	  .shape = shape_grayscale, .build = build_grayscale,
	  .describe = describe_grayscale },
	{ TS_TRANSFORM(NORMALIZE, p_normalize,
		       TS_OPF_FUSE_OUTPUT | TS_OPF_INTEGER,
		       "(x / maxval - mean) / std, as float32"),
	  .shape = shape_normalize, .build = build_normalize,
	  .describe = describe_normalize },
	{ TS_TRANSFORM(TO, p_to, TS_OPF_FUSE_OUTPUT,
		       "convert the element type and layout"),
	  .shape = shape_to, .build = build_to, .describe = describe_to },
	TS_ROW_END,
};
