/*
 * registry.c - the operator table and the shape rules.
 *
 * Every operator of the language is one row of `ops` below. The checker
 * never names an operator except through this table (the lowering reads
 * op_kind), so adding an operator is a row, a shape rule and a case in
 * check.c's argument-to-op builder.
 */
#include "registry.h"

#include <stdio.h>
#include <string.h>

static const char *const w_color[] = {"rgb", "gray", NULL};
static const char *const w_interp[] = {"bilinear", "area", "nearest", NULL};
static const char *const w_dir[] = {"horizontal", "vertical", NULL};
static const char *const w_dtype[] = {"uint8", "uint16", "float16", "float32",
				      NULL};
static const char *const w_layout[] = {"nhwc", "nchw", NULL};
static const char *const w_on_error[] = {"fail", "skip", NULL};

#define P_REQ(n, t, pos, d) \
	{ .name = n, .type = t, .positional = pos, .required = true, .doc = d }
#define P_MIN(lo) .has_min = true, .min = (lo)
#define P_MAX(hi) .has_max = true, .max = (hi)

/* The largest image side any stage takes or makes, in pixels. */
#define TS_REG_MAX_SIDE 65535

static const struct ts_param p_folder[] = {
	P_REQ("path", TS_PT_STRING, true,
	      "root directory; one sub-folder per class (ImageFolder layout)"),
	{ .name = "ext", .type = TS_PT_STRLIST, .def = "[\".jpg\", \".jpeg\", \".png\"]",
	  .doc = "file extensions to index, case-insensitive" },
};

static const struct ts_param p_list[] = {
	P_REQ("path", TS_PT_STRING, true,
	      "a text file of `path,label` lines (CSV; '#' comments)"),
};

static const struct ts_param p_tar[] = {
	P_REQ("pattern", TS_PT_STRING, true,
	      "WebDataset shard names, with {000..146} brace ranges"),
};

static const struct ts_param p_synthetic[] = {
	{ .name = "size", .type = TS_PT_SIZE_PAIR, .positional = true,
	  .def = "224", .def_num = 224, P_MIN(1), P_MAX(TS_REG_MAX_SIDE),
	  .doc = "image height and width: N or [h, w]" },
	{ .name = "height", .type = TS_PT_INT, .def = "size", P_MIN(1),
	  P_MAX(TS_REG_MAX_SIDE), .doc = "image height (overrides size)" },
	{ .name = "width", .type = TS_PT_INT, .def = "size", P_MIN(1),
	  P_MAX(TS_REG_MAX_SIDE), .doc = "image width (overrides size)" },
	{ .name = "count", .type = TS_PT_INT, .def = "1000", .def_num = 1000,
	  P_MIN(1), P_MAX(1e12), .doc = "images per epoch" },
	{ .name = "channels", .type = TS_PT_INT, .def = "3", .def_num = 3,
	  P_MIN(1), P_MAX(4), .doc = "channels per pixel" },
	{ .name = "depth", .type = TS_PT_INT, .def = "8", .def_num = 8, P_MIN(8),
	  P_MAX(16), .doc = "bits per channel: 8 or 16" },
	{ .name = "classes", .type = TS_PT_INT, .def = "10", .def_num = 10,
	  P_MIN(1), P_MAX(1 << 24), .doc = "labels cycle over 0..classes-1" },
};

static const struct ts_param p_shard[] = {
	{ .name = "index", .type = TS_PT_INT, .positional = true, .def = "-1",
	  .def_num = -1, P_MIN(-1), P_MAX(1 << 20),
	  .doc = "this node's index, 0-based; -1: from GROUP_RANK or SLURM_NODEID" },
	{ .name = "count", .type = TS_PT_INT, .positional = true, .def = "-1",
	  .def_num = -1, P_MIN(-1), P_MAX(1 << 20),
	  .doc = "number of nodes; -1: from GROUP_WORLD_SIZE or SLURM_NNODES" },
	{ .name = "drop_last", .type = TS_PT_BOOL, .def = "false", .def_num = 0,
	  .doc = "equal shares by dropping the epoch's last items (true) or by "
		 "repeating its first ones (false), as DistributedSampler" },
};

static const struct ts_param p_shuffle[] = {
	{ .name = "seed", .type = TS_PT_INT, .positional = true, .def = "0",
	  .def_num = 0, P_MIN(0), P_MAX(9007199254740992.0),
	  .doc = "seed of the per-epoch permutation" },
};

static const struct ts_param p_decode[] = {
	{ .name = "color", .type = TS_PT_WORD, .positional = true, .def = "rgb",
	  .def_word = 0, .words = w_color, .doc = "output colour: rgb (3 channels) or gray (1)" },
	{ .name = "depth", .type = TS_PT_INT, .def = "8", .def_num = 8, P_MIN(8),
	  P_MAX(16), .doc = "bits per channel: 8 (uint8) or 16 (uint16)" },
};

/* Image sizes, in pixels: as the decoders and the ring take them. */
#define P_SIZE(d) \
	{ .name = "size", .type = TS_PT_SIZE_PAIR, .positional = true, \
	  .required = true, P_MIN(1), P_MAX(TS_REG_MAX_SIDE), .doc = d }, \
	{ .name = "width", .type = TS_PT_INT, .positional = true, P_MIN(1), \
	  P_MAX(TS_REG_MAX_SIDE), .doc = "width, when size is given as the height" }

static const struct ts_param p_resize[] = {
	P_SIZE("shorter side N, or exactly [h, w]"),
	{ .name = "interp", .type = TS_PT_WORD, .def = "bilinear", .def_word = 0,
	  .words = w_interp, .doc = "interpolation" },
	{ .name = "antialias", .type = TS_PT_BOOL, .def = "true", .def_num = 1,
	  .doc = "low-pass filter when shrinking" },
};

static const struct ts_param p_center_crop[] = {
	P_SIZE("output N x N, or [h, w]"),
};

static const struct ts_param p_random_crop[] = {
	P_SIZE("output N x N, or [h, w]"),
	{ .name = "padding", .type = TS_PT_INT, .def = "0", .def_num = 0, P_MIN(0),
	  P_MAX(4096), .doc = "zero border added on each side before cropping" },
};

static const struct ts_param p_rrc[] = {
	P_SIZE("output N x N, or [h, w]"),
	{ .name = "scale", .type = TS_PT_RANGE, .def = "0.08..1.0",
	  .def_lo = 0.08, .def_hi = 1.0, P_MIN(0), P_MAX(1),
	  .doc = "crop area as a fraction of the image area" },
	{ .name = "ratio", .type = TS_PT_RANGE, .def = "3/4..4/3",
	  .def_lo = 3.0 / 4.0, .def_hi = 4.0 / 3.0, P_MIN(0.01), P_MAX(100),
	  .doc = "crop aspect ratio (width / height), drawn log-uniformly" },
	{ .name = "interp", .type = TS_PT_WORD, .def = "bilinear", .def_word = 0,
	  .words = w_interp, .doc = "interpolation" },
};

static const struct ts_param p_flip[] = {
	{ .name = "direction", .type = TS_PT_WORD, .positional = true,
	  .def = "horizontal", .def_word = 0, .words = w_dir,
	  .doc = "horizontal (mirror left-right) or vertical" },
	{ .name = "p", .type = TS_PT_NUMBER, .def = "0.5", .def_num = 0.5, P_MIN(0),
	  P_MAX(1), .doc = "probability of flipping" },
};

static const struct ts_param p_color_jitter[] = {
	{ .name = "brightness", .type = TS_PT_NUMBER, .positional = true,
	  .def = "0", P_MIN(0), P_MAX(1),
	  .doc = "factor drawn from [1-b, 1+b]" },
	{ .name = "contrast", .type = TS_PT_NUMBER, .positional = true, .def = "0",
	  P_MIN(0), P_MAX(1), .doc = "factor drawn from [1-c, 1+c]" },
	{ .name = "saturation", .type = TS_PT_NUMBER, .positional = true,
	  .def = "0", P_MIN(0), P_MAX(1),
	  .doc = "factor drawn from [1-s, 1+s]" },
};

static const struct ts_param p_grayscale[] = {
	{ .name = "channels", .type = TS_PT_INT, .positional = true, .def = "1",
	  .def_num = 1, P_MIN(1), P_MAX(3), .doc = "output channels: 1 or 3" },
	{ .name = "p", .type = TS_PT_NUMBER, .def = "1.0", .def_num = 1.0, P_MIN(0),
	  P_MAX(1), .doc = "probability of converting" },
};

static const struct ts_param p_normalize[] = {
	{ .name = "mean", .type = TS_PT_NUMLIST, .positional = true,
	  .required = true, P_MIN(-1000), P_MAX(1000),
	  .doc = "per-channel mean, on the 0..1 scale" },
	{ .name = "std", .type = TS_PT_NUMLIST, .positional = true,
	  .required = true, P_MIN(1e-6), P_MAX(1000),
	  .doc = "per-channel standard deviation, > 0" },
};

static const struct ts_param p_to[] = {
	{ .name = "dtype", .type = TS_PT_WORD, .positional = true,
	  .required = true, .words = w_dtype, .doc = "element type" },
	{ .name = "layout", .type = TS_PT_WORD, .positional = true, .def = "nhwc",
	  .def_word = 0, .words = w_layout, .doc = "memory layout of a sample" },
};

static const struct ts_param p_tile[] = {
	P_SIZE("tile N x N, or [h, w]"),
	{ .name = "stride", .type = TS_PT_SIZE_PAIR, .def = "size", P_MIN(1),
	  P_MAX(TS_REG_MAX_SIDE), .doc = "step between tiles: N or [h, w]" },
};

static const struct ts_param p_filter[] = {
	{ .name = "threshold", .type = TS_PT_NUMBER, .positional = true,
	  .def = "0.8", .def_num = 0.8, P_MIN(0), P_MAX(1),
	  .doc = "pixel brightness, as a fraction of full scale" },
	{ .name = "max_fraction", .type = TS_PT_NUMBER, .def = "0.5",
	  .def_num = 0.5, P_MIN(0), P_MAX(1),
	  .doc = "drop a sample when more than this fraction of its pixels "
		 "exceed threshold" },
};

/* plugin(): besides these, any named parameter is the plugin's own
 * (check.c binds those; they reach the plugin as text). */
static const struct ts_param p_plugin[] = {
	P_REQ("path", TS_PT_STRING, true,
	      "the plugin shared object; relative to the pipeline file's folder"),
	{ .name = "timeout_ms", .type = TS_PT_INT, .def = "1000", .def_num = 1000,
	  P_MIN(1), P_MAX(600000),
	  .doc = "time limit per sample; past it the plugin process is killed" },
	{ .name = "memory", .type = TS_PT_SIZE, .def = "1 GiB", .def_num = 1073741824.0,
	  P_MIN(0), P_MAX(1152921504606846976.0),
	  .doc = "address space the plugin process may use (RLIMIT_AS); 0 = no limit" },
};

static const struct ts_param p_batch[] = {
	{ .name = "n", .type = TS_PT_INT, .positional = true, .required = true,
	  P_MIN(1), P_MAX(1 << 20), .doc = "default batch size; the unit of ring" },
};

static const char *const w_device[] = {"cuda", NULL};
static const char *const w_device_dtype[] = {"float32", "float16", NULL};
static const char *const w_device_layout[] = {"nchw", NULL};

static const struct ts_param p_device[] = {
	{ .name = "target", .type = TS_PT_WORD, .positional = true,
	  .required = true, .words = w_device, .doc = "the device: cuda" },
	{ .name = "dtype", .type = TS_PT_WORD, .def = "float32", .def_word = 0,
	  .words = w_device_dtype, .doc = "element type on the device" },
	{ .name = "mean", .type = TS_PT_NUMLIST, P_MIN(-1000), P_MAX(1000),
	  .doc = "per-channel mean, on the 0..1 scale: normalize on the device" },
	{ .name = "std", .type = TS_PT_NUMLIST, P_MIN(1e-6), P_MAX(1000),
	  .doc = "per-channel standard deviation, > 0 (with mean)" },
	{ .name = "layout", .type = TS_PT_WORD, .def = "nchw", .def_word = 0,
	  .words = w_device_layout, .doc = "memory layout on the device" },
};

static const struct ts_param serve_params[] = {
	{ .name = "socket", .type = TS_PT_STRING, .def = "\"$XDG_RUNTIME_DIR/tsrun/NAME.sock\"",
	  .doc = "Unix socket path trainers connect to" },
	{ .name = "group", .type = TS_PT_STRING,
	  .doc = "group allowed to connect (socket mode 0660); default: owner only" },
	{ .name = "epochs", .type = TS_PT_INT, .def = "1", .def_num = 1, P_MIN(0),
	  P_MAX(1e9), .doc = "passes over the data; 0 = forever" },
	{ .name = "ring", .type = TS_PT_COUNT, .def = "8 batches", .def_num = 8,
	  P_MIN(1), P_MAX(1 << 30), .doc = "ring capacity: N batches or N samples" },
	{ .name = "memory", .type = TS_PT_SIZE, .def = "0", .def_num = 0, P_MIN(0),
	  P_MAX(1152921504606846976.0), .doc = "memory budget; refuse to start above it; 0 = none" },
	{ .name = "threads", .type = TS_PT_THREADS, .def = "auto", .def_num = 0,
	  P_MIN(1), P_MAX(1024), .doc = "worker threads; auto = online cores" },
	{ .name = "on_error", .type = TS_PT_WORD, .def = "fail", .def_word = 0,
	  .words = w_on_error, .doc = "on an unreadable image: fail or skip it" },
	{ .name = "queue_depth", .type = TS_PT_INT, .def = "64", .def_num = 64,
	  P_MIN(1), P_MAX(4096), .doc = "io_uring reads in flight" },
};

static const char *plural(int n)
{
	return n == 1 ? "" : "s";
}

static int shape_decode(const struct ts_op *op, const struct ts_shape *in,
			struct ts_shape *out, struct ts_shape_err *e)
{
	*out = (struct ts_shape){ .c = op->color == TS_COLOR_RGB ? 3 : 1,
				  .dtype = op->depth == 16 ? TS_DTYPE_U16 : TS_DTYPE_U8,
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

/* torchvision's Resize(int): the shorter side becomes size, the longer
 * keeps the aspect ratio (truncated). Unknown when the input varies. */
static int shape_resize(const struct ts_op *op, const struct ts_shape *in,
			struct ts_shape *out, struct ts_shape_err *e)
{
	int rc = 0;

	*out = *in;
	if (op->size_w) {
		out->h = op->size_h;
		out->w = op->size_w;
	} else if (in->h && in->w) {
		long long side = (long long)op->size_h *
				 (in->h <= in->w ? in->w : in->h) /
				 (in->h <= in->w ? in->h : in->w);
		if (side > TS_REG_MAX_SIDE) {
			e->param = "size";
			snprintf(e->msg, sizeof(e->msg),
				 "resize(%d) of the %dx%d image makes its longer side %lld, above %d",
				 op->size_h, in->h, in->w, side, TS_REG_MAX_SIDE);
			snprintf(e->hint, sizeof(e->hint),
				 "resize to an exact [h, w] instead");
			side = TS_REG_MAX_SIDE;
			rc = -1;
		}
		if (in->h <= in->w) {
			out->h = op->size_h;
			out->w = (int)side;
		} else {
			out->w = op->size_h;
			out->h = (int)side;
		}
	} else {
		out->h = out->w = 0;
	}
	return rc;
}

static int shape_crop(const struct ts_op *op, const struct ts_shape *in,
		      struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	out->h = op->size_h;
	out->w = op->size_w;
	if (op->kind == TS_OP_CENTER_CROP || op->kind == TS_OP_RANDOM_CROP) {
		int pad = op->kind == TS_OP_RANDOM_CROP ? 2 * op->padding : 0;
		if (in->h && in->w &&
		    (in->h + pad < op->size_h || in->w + pad < op->size_w)) {
			e->param = "size";
			snprintf(e->msg, sizeof(e->msg),
				 "crop %dx%d is larger than the %dx%d image",
				 op->size_h, op->size_w, in->h, in->w);
			snprintf(e->hint, sizeof(e->hint),
				 "crop at most %dx%d, or resize first",
				 in->h + pad, in->w + pad);
			return -1;
		}
	}
	return 0;
}

static int shape_same(const struct ts_op *op, const struct ts_shape *in,
		      struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	return 0;
}

static int shape_color_jitter(const struct ts_op *op, const struct ts_shape *in,
			      struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	if (op->saturation > 0 && in->c != 3) {
		e->param = "saturation";
		snprintf(e->msg, sizeof(e->msg),
			 "saturation needs 3 channels, but the image has %d",
			 in->c);
		snprintf(e->hint, sizeof(e->hint),
			 "drop saturation, or decode(rgb)");
		return -1;
	}
	return 0;
}

static int shape_grayscale(const struct ts_op *op, const struct ts_shape *in,
			   struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	out->c = op->channels;
	if (op->p < 1.0 && op->channels != in->c) {
		e->param = "p";
		snprintf(e->msg, sizeof(e->msg),
			 "grayscale with p < 1 must keep the channel count (%d), "
			 "or samples would differ in shape", in->c);
		snprintf(e->hint, sizeof(e->hint),
			 "use grayscale(channels = %d, p = %g)", in->c, op->p);
		return -1;
	}
	return 0;
}

static int shape_normalize(const struct ts_op *op, const struct ts_shape *in,
			   struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	out->dtype = TS_DTYPE_F32;
	out->normalized = true;
	if (op->n_mean != in->c) {
		e->param = "mean";
		snprintf(e->msg, sizeof(e->msg),
			 "normalize has %d mean and std value%s, but the image has %d channel%s",
			 op->n_mean, plural(op->n_mean), in->c, plural(in->c));
		snprintf(e->hint, sizeof(e->hint),
			 "give %d value%s to mean and std%s", in->c,
			 plural(in->c),
			 in->c == 1 ? ", or decode(rgb) for 3 channels" : "");
		return -1;
	}
	return 0;
}

static int shape_to(const struct ts_op *op, const struct ts_shape *in,
		    struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	out->dtype = op->dtype;
	out->layout = op->layout;
	return 0;
}

static int shape_tile(const struct ts_op *op, const struct ts_shape *in,
		      struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	out->h = op->size_h;
	out->w = op->size_w;
	if (in->h && in->w && (in->h < op->size_h || in->w < op->size_w)) {
		e->param = "size";
		snprintf(e->msg, sizeof(e->msg),
			 "tile %dx%d is larger than the %dx%d image",
			 op->size_h, op->size_w, in->h, in->w);
		snprintf(e->hint, sizeof(e->hint), "use tiles of at most %dx%d",
			 in->h, in->w);
		return -1;
	}
	return 0;
}

#define OP(n, k, ok, params, rule, d) \
	{ n, k, ok, params, TS_ARRAY_LEN_(params), rule, d }
#define TS_ARRAY_LEN_(a) (sizeof(a) / sizeof((a)[0]))

static const struct ts_opdef ops[] = {
	OP("folder", TS_REG_SOURCE, -1, p_folder, NULL,
	   "images in class sub-folders (ImageFolder); label = sorted folder index"),
	OP("list", TS_REG_SOURCE, -1, p_list, NULL,
	   "images named by a list file of path,label lines"),
	OP("tar", TS_REG_SOURCE, -1, p_tar, NULL,
	   "WebDataset tar shards; label from the .cls member"),
	OP("synthetic", TS_REG_SOURCE, -1, p_synthetic, NULL,
	   "generated, already decoded images (tests, overhead benchmarks)"),
	OP("shard", TS_REG_MODIFIER, -1, p_shard, NULL,
	   "this node's equal share of each epoch's order: items index, index + count, ..."),
	OP("shuffle", TS_REG_MODIFIER, -1, p_shuffle, NULL,
	   "a fresh permutation every epoch, from (seed, epoch)"),
	OP("decode", TS_REG_TRANSFORM, TS_OP_DECODE, p_decode, shape_decode,
	   "JPEG or PNG bytes to pixels"),
	OP("resize", TS_REG_TRANSFORM, TS_OP_RESIZE, p_resize, shape_resize,
	   "scale the shorter side to N, or to exactly [h, w]"),
	OP("center_crop", TS_REG_TRANSFORM, TS_OP_CENTER_CROP, p_center_crop,
	   shape_crop, "crop the centre"),
	OP("random_crop", TS_REG_TRANSFORM, TS_OP_RANDOM_CROP, p_random_crop,
	   shape_crop, "crop at a random position"),
	OP("random_resized_crop", TS_REG_TRANSFORM, TS_OP_RANDOM_RESIZED_CROP,
	   p_rrc, shape_crop,
	   "crop a random area and aspect ratio, resize it to size"),
	OP("flip", TS_REG_TRANSFORM, TS_OP_FLIP, p_flip, shape_same,
	   "mirror with probability p"),
	OP("color_jitter", TS_REG_TRANSFORM, TS_OP_COLOR_JITTER, p_color_jitter,
	   shape_color_jitter, "random brightness, contrast and saturation"),
	OP("grayscale", TS_REG_TRANSFORM, TS_OP_GRAYSCALE, p_grayscale,
	   shape_grayscale, "convert to luma, with probability p"),
	OP("normalize", TS_REG_TRANSFORM, TS_OP_NORMALIZE, p_normalize,
	   shape_normalize, "(x / maxval - mean) / std, as float32"),
	OP("to", TS_REG_TRANSFORM, TS_OP_TO, p_to, shape_to,
	   "convert the element type and layout"),
	OP("tile", TS_REG_TRANSFORM, TS_OP_TILE, p_tile, shape_tile,
	   "cut each image into tiles (one sample in, several out)"),
	OP("filter", TS_REG_TRANSFORM, TS_OP_FILTER, p_filter, shape_same,
	   "drop samples that are mostly bright (clouds)"),
	OP("plugin", TS_REG_TRANSFORM, TS_OP_PLUGIN, p_plugin, shape_same,
	   "a user C function, run in an isolated process with a time limit"),
	OP("device", TS_REG_DEVICE, -1, p_device, NULL,
	   "finish on the GPU: uint8 nhwc to float nchw, normalized, in one kernel"),
	OP("batch", TS_REG_SINK, -1, p_batch, NULL,
	   "the default batch size; must be last"),
};

const struct ts_opdef *ts_registry_ops(size_t *n)
{
	*n = TS_ARRAY_LEN_(ops);
	return ops;
}

const struct ts_opdef *ts_registry_find(const char *name)
{
	for (size_t i = 0; i < TS_ARRAY_LEN_(ops); i++)
		if (strcmp(ops[i].name, name) == 0)
			return &ops[i];
	return NULL;
}

const struct ts_param *ts_registry_serve(size_t *n)
{
	*n = TS_ARRAY_LEN_(serve_params);
	return serve_params;
}

const struct ts_param *ts_registry_param(const struct ts_opdef *def,
					 const char *name)
{
	const struct ts_param *p = def ? def->params : serve_params;
	size_t n = def ? def->n_params : TS_ARRAY_LEN_(serve_params);
	for (size_t i = 0; i < n; i++)
		if (strcmp(p[i].name, name) == 0)
			return &p[i];
	return NULL;
}

const char *ts_registry_type_desc(enum ts_param_type t)
{
	switch (t) {
	case TS_PT_INT: return "an integer";
	case TS_PT_NUMBER: return "a number";
	case TS_PT_STRING: return "a string";
	case TS_PT_BOOL: return "true or false";
	case TS_PT_WORD: return "a word";
	case TS_PT_NUMLIST: return "a list of numbers such as [0.5, 0.5, 0.5]";
	case TS_PT_STRLIST: return "a list of strings such as [\".jpg\", \".png\"]";
	case TS_PT_RANGE: return "a range such as 0.08..1.0";
	case TS_PT_SIZE: return "a size such as 4 GiB";
	case TS_PT_SIZE_PAIR: return "a size such as 224 or [224, 256]";
	case TS_PT_COUNT: return "a count such as 8 batches or 2048 samples";
	case TS_PT_THREADS: return "auto or an integer";
	}
	return "a value";
}

const char *ts_registry_kind_name(enum ts_registry_kind k)
{
	switch (k) {
	case TS_REG_SOURCE: return "source";
	case TS_REG_MODIFIER: return "modifier";
	case TS_REG_TRANSFORM: return "transform";
	case TS_REG_SINK: return "sink";
	case TS_REG_DEVICE: return "device";
	}
	return "?";
}
