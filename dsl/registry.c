/*
 * registry.c - the operator table: the families' rows (ops_source.c,
 * ops_image.c, ops_sample.c) in documentation order, then device and
 * batch, whose rules are the checker's own (check_device.c and the end of
 * a pipeline); the serve settings; lookups.
 *
 * The checker reaches every operator through its row: adding one is a
 * row (with its parameters, shape rule, builder and description) in its
 * family's file, and its kernel in runtime/.
 */
#include "registry.h"

#include <stdio.h>
#include <string.h>

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

static const struct ts_opdef ops_end[] = {
	{ .name = "device", .kind = TS_REG_DEVICE, .op_kind = -1, .params = p_device,
	  .n_params = TS_ARRAY_LEN_(p_device),
	  .doc = "finish on the GPU: uint8 nhwc to float nchw, normalized, in one kernel" },
	{ .name = "batch", .kind = TS_REG_SINK, .op_kind = -1, .params = p_batch,
	  .n_params = TS_ARRAY_LEN_(p_batch),
	  .doc = "the default batch size; must be last" },
	TS_ROW_END,
};

/* The families, in documentation order. */
static const struct ts_opdef *const families[] = {
	ts_ops_source, ts_ops_image, ts_ops_color, ts_ops_filter, ts_ops_geometry,
	ts_ops_policy, ts_ops_sample, ts_ops_views,
	ops_end,
};

size_t ts_registry_count(void)
{
	size_t n = 0;
	for (size_t f = 0; f < TS_ARRAY_LEN_(families); f++)
		for (const struct ts_opdef *d = families[f]; d->name; d++)
			n++;
	return n;
}

const struct ts_opdef *ts_registry_at(size_t i)
{
	for (size_t f = 0; f < TS_ARRAY_LEN_(families); f++)
		for (const struct ts_opdef *d = families[f]; d->name; d++)
			if (i-- == 0)
				return d;
	return NULL;
}

const struct ts_opdef *ts_registry_find(const char *name)
{
	for (size_t f = 0; f < TS_ARRAY_LEN_(families); f++)
		for (const struct ts_opdef *d = families[f]; d->name; d++)
			if (strcmp(d->name, name) == 0)
				return d;
	return NULL;
}

/* The row of kind k whose op_kind is op_kind. */
static const struct ts_opdef *of(enum ts_registry_kind k, int op_kind)
{
	for (size_t f = 0; f < TS_ARRAY_LEN_(families); f++)
		for (const struct ts_opdef *d = families[f]; d->name; d++)
			if (d->kind == k && d->op_kind == op_kind)
				return d;
	return NULL;
}

const struct ts_opdef *ts_registry_of_kind(int op_kind)
{
	return of(TS_REG_TRANSFORM, op_kind);
}

const struct ts_opdef *ts_registry_of_source(int source_kind)
{
	return of(TS_REG_SOURCE, source_kind);
}

static const char *const w_on_error[] = {"fail", "skip", NULL};

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
	{ .name = "max_image_pixels", .type = TS_PT_INT, .def = "33554432",
	  .def_num = 33554432.0, P_MIN(1), P_MAX(268435456.0),
	  .doc = "largest image decoded (width x height); a larger one fails under on_error" },
	{ .name = "max_file_size", .type = TS_PT_SIZE, .def = "64 MiB", .def_num = 67108864.0,
	  P_MIN(1), P_MAX(1073741824.0),
	  .doc = "largest file or tar member read; a larger one fails under on_error" },
	{ .name = "stall_timeout", .type = TS_PT_NUMBER, .def = "120", .def_num = 120,
	  P_MIN(0), P_MAX(86400),
	  .doc = "seconds a trainer may hold the ring while others wait; then it is detached; 0 = forever" },
	{ .name = "cache", .type = TS_PT_SIZE_AUTO, .def = "off", .def_num = 0, P_MIN(0),
	  P_MAX(1152921504606846976.0),
	  .doc = "decoded cache: pixels of as many items as fit, kept for the run; auto = what memory leaves; off (0) = none" },
	{ .name = "job_timeout", .type = TS_PT_NUMBER, .def = "stall_timeout", .def_num = -1,
	  P_MIN(0), P_MAX(86400),
	  .doc = "seconds a job waits for all its ranks; then its connected ranks get an error; 0 = forever" },
	{ .name = "consumers", .type = TS_PT_INT, .def = "64", .def_num = 64, P_MIN(1), P_MAX(64),
	  .doc = "trainers served at once; more are refused" },
	{ .name = "metrics", .type = TS_PT_STRING,
	  .doc = "file kept current in the Prometheus text format (who waits, rates); default: none" },
};

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
		if (strcmp(p[i].name, name) == 0 ||
		    (p[i].alias && strcmp(p[i].alias, name) == 0))
			return &p[i];
	return NULL;
}

const char *ts_registry_plural(int n)
{
	return n == 1 ? "" : "s";
}

void ts_registry_size_desc(int h, int w, char *buf, size_t n)
{
	if (h == w)
		snprintf(buf, n, "%d", h);
	else
		snprintf(buf, n, "[%d, %d]", h, w);
}

int ts_registry_need_u8(const char *name, const struct ts_shape *in,
			struct ts_shape_err *e)
{
	if (in->dtype != TS_DTYPE_U16)
		return 0;
	snprintf(e->msg, sizeof(e->msg),
		 "'%s' works on uint8 pixels, but the data is uint16 here", name);
	snprintf(e->hint, sizeof(e->hint),
		 "decode with depth = 8, or add to(uint8) before %s", name);
	return -1;
}

int ts_registry_shape_same(const struct ts_op *op, const struct ts_shape *in,
			   struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	return 0;
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
	case TS_PT_OPS: return "operators such as flip(horizontal) | invert()";
	case TS_PT_OPSLIST: return "a list of operators such as [equalize, posterize(4) | invert]";
	case TS_PT_NUMBERS: return "a list of numbers such as [1, 2, 1]";
	case TS_PT_SIZE_AUTO: return "a size such as 4 GiB, auto or off";
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
