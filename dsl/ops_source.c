/*
 * ops_source.c - the sources (folder, list, tar, synthetic) and the
 * modifiers right after them (shard, shuffle), one block each:
 * parameters, how the bound arguments set up the plan's source, and the
 * registry rows (at the end). Their runtime side is runtime/source_*.c
 * and runtime/share.c.
 */
#include "checker.h"

#include <stdio.h>
#include <stdlib.h>

#include "util.h"

/* A source reads encoded images until decode, three channels assumed. */
static void encoded_start(struct ts_shape *shape)
{
	*shape = (struct ts_shape){ .encoded = true, .c = 3 };
}

/* src->path from the parameter name. A missing or mistyped path was
 * reported already (bind_args left it NULL); only a failed copy of a
 * given one is out of memory. */
static int source_path(const struct ts_opdef *def, struct ts_check_val *vals,
		       const char *name, struct ts_source *src)
{
	const char *s = ts_check_arg(def, vals, name)->str;
	src->loc = ts_check_arg(def, vals, name)->loc;
	src->path = ts_strdup(s);
	return s && !src->path ? TS_E_NOMEM : 0;
}

/* ---- folder ---------------------------------------------------------- */

static const struct ts_param p_folder[] = {
	P_REQ("path", TS_PT_STRING, true,
	      "root directory; one sub-folder per class (ImageFolder layout)"),
	{ .name = "ext", .type = TS_PT_STRLIST, .def = "[\".jpg\", \".jpeg\", \".png\"]",
	  .doc = "file extensions to index, case-insensitive" },
};

static int apply_folder(struct ts_check *c, const struct ts_opdef *def,
			struct ts_check_val *vals, const struct ts_ast_call *call,
			struct ts_plan *plan, struct ts_shape *shape)
{
	struct ts_source *src = &plan->source;
	const struct ts_check_val *ext = ts_check_arg(def, vals, "ext");
	const char *path = ts_check_arg(def, vals, "path")->str;

	encoded_start(shape);
	src->kind = TS_SRC_FOLDER;
	src->loc = ts_check_arg(def, vals, "path")->loc;
	src->path = ts_strdup(path);
	if (ext->given) {
		const struct ts_ast_value *it = ext->items;
		src->exts = calloc(ext->n_items ? ext->n_items : 1, sizeof(char *));
		if (!src->exts)
			return TS_E_NOMEM;
		for (size_t i = 0; i < ext->n_items && it; i++, it = it->next) {
			char *e = ts_strdup(it->str);
			if (!e)
				return TS_E_NOMEM;
			for (char *q = e; *q; q++)
				if (*q >= 'A' && *q <= 'Z')
					*q = (char)(*q - 'A' + 'a');
			src->exts[src->n_exts++] = e;
			if (e[0] != '.') {
				ts_check_err(c, it->loc, NULL,
					     "extension '%s' must start with '.'", e);
			}
		}
	} else {
		static const char *const d[] = {".jpg", ".jpeg", ".png"};
		src->exts = calloc(3, sizeof(char *));
		if (!src->exts)
			return TS_E_NOMEM;
		for (size_t i = 0; i < 3; i++) {
			if (!(src->exts[i] = ts_strdup(d[i])))
				return TS_E_NOMEM;
			src->n_exts++;
		}
	}
	return path && !src->path ? TS_E_NOMEM : 0;
}

/* ---- list ------------------------------------------------------------ */

static const struct ts_param p_list[] = {
	P_REQ("path", TS_PT_STRING, true,
	      "a text file of `path,label` lines (CSV; '#' comments)"),
};

static int apply_list(struct ts_check *c, const struct ts_opdef *def,
		      struct ts_check_val *vals, const struct ts_ast_call *call,
		      struct ts_plan *plan, struct ts_shape *shape)
{
	encoded_start(shape);
	plan->source.kind = TS_SRC_LIST;
	return source_path(def, vals, "path", &plan->source);
}

/* ---- tar ------------------------------------------------------------- */

static const struct ts_param p_tar[] = {
	P_REQ("pattern", TS_PT_STRING, true,
	      "WebDataset shard names, with {000..146} brace ranges"),
};

static int apply_tar(struct ts_check *c, const struct ts_opdef *def,
		     struct ts_check_val *vals, const struct ts_ast_call *call,
		     struct ts_plan *plan, struct ts_shape *shape)
{
	encoded_start(shape);
	plan->source.kind = TS_SRC_TAR;
	return source_path(def, vals, "pattern", &plan->source);
}

/* ---- synthetic ------------------------------------------------------- */

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

/* Decoded pixels from the start: the shape is the source's. */
static int apply_synthetic(struct ts_check *c, const struct ts_opdef *def,
			   struct ts_check_val *vals,
			   const struct ts_ast_call *call, struct ts_plan *plan,
			   struct ts_shape *shape)
{
	struct ts_source *src = &plan->source;
	const struct ts_check_val *size = ts_check_arg(def, vals, "size");
	const struct ts_check_val *h = ts_check_arg(def, vals, "height");
	const struct ts_check_val *w = ts_check_arg(def, vals, "width");
	const struct ts_check_val *depth = ts_check_arg(def, vals, "depth");

	src->kind = TS_SRC_SYNTHETIC;
	src->height = h->given ? (int)h->num : size->h;
	src->width = w->given ? (int)w->num : size->w;
	src->count = (int64_t)ts_check_arg(def, vals, "count")->num;
	src->channels = (int)ts_check_arg(def, vals, "channels")->num;
	src->depth = (int)depth->num;
	src->classes = (int)ts_check_arg(def, vals, "classes")->num;
	if (src->depth != 8 && src->depth != 16) {
		ts_check_err(c, depth->loc, NULL,
			     "parameter 'depth' must be 8 or 16, got %d", src->depth);
		src->depth = 8;
	}
	*shape = (struct ts_shape){ .h = src->height, .w = src->width,
				    .c = src->channels,
				    .dtype = src->depth == 16 ? TS_DTYPE_U16
							     : TS_DTYPE_U8 };
	return 0;
}

/* ---- shard ----------------------------------------------------------- */

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

static int apply_shard(struct ts_check *c, const struct ts_opdef *def,
		       struct ts_check_val *vals, const struct ts_ast_call *call,
		       struct ts_plan *plan, struct ts_shape *shape)
{
	int i = (int)ts_check_arg(def, vals, "index")->num;
	int n = (int)ts_check_arg(def, vals, "count")->num;

	if (c->sharded)
		ts_check_err(c, call->name_loc, NULL, "'shard' given twice");
	c->sharded = true;
	if ((i == -1) != (n == -1)) {
		ts_check_err(c, call->loc,
			     "give both index and count, or neither to read them from GROUP_RANK and GROUP_WORLD_SIZE (or SLURM_NODEID and SLURM_NNODES)",
			     "shard needs both index and count");
	} else if (n != -1 && (n < 1 || i >= n)) {
		char hint[192];
		snprintf(hint, sizeof(hint), "index runs from 0 to count - 1");
		ts_check_err(c, ts_check_arg_loc(def, vals, call, "index"), hint,
			     "shard index %d is out of range for %d shard%s",
			     i, n, n == 1 ? "" : "s");
	}
	plan->source.shard_index = i;
	plan->source.shard_count = n;
	plan->source.shard_drop = ts_check_arg(def, vals, "drop_last")->num != 0;
	return 0;
}

/* ---- shuffle --------------------------------------------------------- */

static const struct ts_param p_shuffle[] = {
	{ .name = "seed", .type = TS_PT_INT, .positional = true, .def = "0",
	  .def_num = 0, P_MIN(0), P_MAX(9007199254740992.0),
	  .doc = "seed of the per-epoch permutation" },
};

static int apply_shuffle(struct ts_check *c, const struct ts_opdef *def,
			 struct ts_check_val *vals,
			 const struct ts_ast_call *call, struct ts_plan *plan,
			 struct ts_shape *shape)
{
	if (c->shuffled)
		ts_check_err(c, call->name_loc, NULL, "'shuffle' given twice");
	else if (c->sharded)
		/* shard takes each node's share of the epoch's order: the
		 * order comes first */
		ts_check_err(c, call->name_loc,
			     "write shuffle(...) | shard(...): the epoch's order is drawn over the whole data set, then each node takes its share of it",
			     "'shuffle' after 'shard' would shuffle a fixed share; shard takes a fresh share of the shuffled epoch");
	c->shuffled = true;
	plan->source.shuffle = true;
	plan->source.seed = (uint64_t)ts_check_arg(def, vals, "seed")->num;
	return 0;
}

/* ---- what `tsrun graph` prints of each ---------------------------------- */

static void describe_folder(const struct ts_source *s, char *buf, size_t n)
{
	size_t at = (size_t)snprintf(buf, n, "folder(\"%s\", ext=[", s->path);
	for (size_t i = 0; i < s->n_exts && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, "%s\"%s\"", i ? ", " : "",
				       s->exts[i]);
	if (at < n)
		snprintf(buf + at, n - at, "])");
}

static void describe_list(const struct ts_source *s, char *buf, size_t n)
{
	snprintf(buf, n, "list(\"%s\")", s->path);
}

static void describe_tar(const struct ts_source *s, char *buf, size_t n)
{
	snprintf(buf, n, "tar(\"%s\")", s->path);
}

static void describe_synthetic(const struct ts_source *s, char *buf, size_t n)
{
	snprintf(buf, n,
		 "synthetic(height=%d, width=%d, count=%lld, channels=%d, depth=%d, classes=%d)",
		 s->height, s->width, (long long)s->count, s->channels, s->depth,
		 s->classes);
}

/* ---- the rows -------------------------------------------------------- */

const struct ts_opdef ts_ops_source[] = {
	{ TS_SOURCE(FOLDER, p_folder, apply_folder,
	  "images in class sub-folders (ImageFolder); label = sorted folder index"),
	  .describe_source = describe_folder },
	{ TS_SOURCE(LIST, p_list, apply_list,
	  "images named by a list file of path,label lines"),
	  .describe_source = describe_list },
	{ TS_SOURCE(TAR, p_tar, apply_tar,
	  "WebDataset tar shards; label from the .cls member"),
	  .describe_source = describe_tar },
	{ TS_SOURCE(SYNTHETIC, p_synthetic, apply_synthetic,
	  "generated, already decoded images (tests, overhead benchmarks)"),
	  .describe_source = describe_synthetic },
	{ TS_STAGE("shard", TS_REG_MODIFIER, p_shard, apply_shard,
		   "this node's equal share of each epoch's order: items index, index + count, ...") },
	{ TS_STAGE("shuffle", TS_REG_MODIFIER, p_shuffle, apply_shuffle,
		   "a fresh permutation every epoch, from (seed, epoch)") },
	TS_ROW_END,
};
