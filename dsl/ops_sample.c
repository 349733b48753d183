/*
 * ops_sample.c - the operators that change how many samples there are
 * (tile, filter) or run user code (plugin), one block each: parameters,
 * shape rule, how the bound arguments build the op, how `tsrun graph`
 * describes it, and its registry row (at the end). Their kernels are in
 * runtime/augment.c (tile, filter) and runtime/plugin.c.
 */
#include "checker.h"

#include <stdio.h>

#include "lower.h"

/* ---- tile ------------------------------------------------------------ */

static const struct ts_param p_tile[] = {
	P_SIZE("tile N x N, or [h, w]"),
	{ .name = "stride", .type = TS_PT_SIZE_PAIR, .def = "size", P_MIN(1),
	  P_MAX(TS_REG_MAX_SIDE), .doc = "step between tiles: N or [h, w]" },
};

static int shape_tile(const struct ts_op *op, const struct ts_shape *in,
		      struct ts_shape *out, struct ts_shape_err *e)
{
	*out = *in;
	out->h = op->tile.size_h;
	out->w = op->tile.size_w;
	if (in->h && in->w && (in->h < op->tile.size_h || in->w < op->tile.size_w)) {
		e->param = "size";
		snprintf(e->msg, sizeof(e->msg),
			 "tile %dx%d is larger than the %dx%d image",
			 op->tile.size_h, op->tile.size_w, in->h, in->w);
		snprintf(e->hint, sizeof(e->hint), "use tiles of at most %dx%d",
			 in->h, in->w);
		return -1;
	}
	return 0;
}

static int build_tile(struct ts_check *c, const struct ts_opdef *def,
		      struct ts_check_val *vals, const struct ts_ast_call *call,
		      const struct ts_shape *in, struct ts_op *op)
{
	const struct ts_check_val *stride = ts_check_arg(def, vals, "stride");
	int rc = ts_check_arg_size(c, def, vals, &op->tile.size_h, &op->tile.size_w);
	op->tile.stride_h = stride->given ? stride->h : op->tile.size_h;
	op->tile.stride_w = stride->given ? stride->w : op->tile.size_w;
	return rc;
}

/* The tiles of one image of a known size: rows times columns. */
static int64_t fanout_tile(const struct ts_op *op, const struct ts_shape *in)
{
	if (!in->h || !in->w)
		return 0;
	int64_t ny = in->h >= op->tile.size_h ? (in->h - op->tile.size_h) / op->tile.stride_h + 1 : 0;
	int64_t nx = in->w >= op->tile.size_w ? (in->w - op->tile.size_w) / op->tile.stride_w + 1 : 0;
	return ny * nx;
}

static void describe_tile(const struct ts_op *op, char *buf, size_t n)
{
	char a[48], b[48];

	ts_registry_size_desc(op->tile.size_h, op->tile.size_w, a, sizeof(a));
	ts_registry_size_desc(op->tile.stride_h, op->tile.stride_w, b, sizeof(b));
	snprintf(buf, n, "tile(%s, stride=%s)", a, b);
}

/* ---- filter ---------------------------------------------------------- */

static const struct ts_param p_filter[] = {
	{ .name = "threshold", .type = TS_PT_NUMBER, .positional = true,
	  .def = "0.8", .def_num = 0.8, P_MIN(0), P_MAX(1),
	  .doc = "pixel brightness, as a fraction of full scale" },
	{ .name = "max_fraction", .type = TS_PT_NUMBER, .def = "0.5",
	  .def_num = 0.5, P_MIN(0), P_MAX(1),
	  .doc = "drop a sample when more than this fraction of its pixels "
		 "exceed threshold" },
};

static int build_filter(struct ts_check *c, const struct ts_opdef *def,
			struct ts_check_val *vals, const struct ts_ast_call *call,
			const struct ts_shape *in, struct ts_op *op)
{
	op->filter.threshold = ts_check_arg(def, vals, "threshold")->num;
	op->filter.max_fraction = ts_check_arg(def, vals, "max_fraction")->num;
	return 0;
}

/* At most the sample itself. */
static int64_t fanout_one(const struct ts_op *op, const struct ts_shape *in)
{
	return 1;
}

static void describe_filter(const struct ts_op *op, char *buf, size_t n)
{
	snprintf(buf, n, "filter(threshold=%g, max_fraction=%g)",
		 op->filter.threshold, op->filter.max_fraction);
}

/* ---- plugin ---------------------------------------------------------- */

/* plugin(): besides these, any named parameter is the plugin's own
 * (ts_check_bind_plugin binds those; they reach the plugin as text). */
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

/* ts_check_bind_plugin filled op->plugin. */
static int build_plugin(struct ts_check *c, const struct ts_opdef *def,
			struct ts_check_val *vals, const struct ts_ast_call *call,
			const struct ts_shape *in, struct ts_op *op)
{
	return 0;
}

/* plugin("x.so", key=value, ..., timeout_ms=N, memory=SIZE): the
 * plugin's own parameters as the text it receives. */
static void describe_plugin(const struct ts_op *op, char *buf, size_t n)
{
	const struct ts_op_plugin *pl = op->plugin;
	size_t at;

	if (!pl) {
		snprintf(buf, n, "plugin()");
		return;
	}
	at = (size_t)snprintf(buf, n, "plugin(\"%s\"", pl->path);
	for (int i = 0; i < pl->n_params && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, ", %s=%s", pl->names[i],
				       pl->values[i]);
	if (at < n) {
		char mem[32];
		ts_plan_format_size(pl->memory, mem, sizeof(mem));
		snprintf(buf + at, n - at, ", timeout_ms=%d, memory=%s)", pl->timeout_ms,
			 pl->memory ? mem : "0");
	}
}

/* ---- the rows -------------------------------------------------------- */

const struct ts_opdef ts_ops_sample[] = {
	{ TS_TRANSFORM(TILE, p_tile,
		       TS_OPF_PIXELS | TS_OPF_EXPANDS | TS_OPF_BANDS,
		       "cut each image into tiles (one sample in, several out)"),
	  .shape = shape_tile, .build = build_tile, .describe = describe_tile,
	  .fanout = fanout_tile },
	{ TS_TRANSFORM(FILTER, p_filter, TS_OPF_PIXELS | TS_OPF_EXPANDS,
		       "drop samples that are mostly bright (clouds)"),
	  .shape = ts_registry_shape_same, .build = build_filter,
	  .describe = describe_filter, .fanout = fanout_one },
	{ TS_TRANSFORM(PLUGIN, p_plugin,
		       TS_OPF_PIXELS | TS_OPF_EXPANDS | TS_OPF_OWN_ARGS,
		       "a user C function, run in an isolated process with a time limit"),
	  .shape = ts_registry_shape_same, .build = build_plugin,
	  .describe = describe_plugin, .fanout = fanout_one },
	TS_ROW_END,
};
