/*
 * graph.c - the plan as text (`tsrun graph`) or as Graphviz dot.
 *
 * The text form is what a user reads to see what will run: each executed
 * stage with its parameters, what fusion folded together, the shape after
 * every stage, and the memory figure the budget is checked against. It is
 * also the golden output of tests/golden-graph.sh, so it must be a pure
 * function of the plan.
 */
#include "dsl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower.h"
#include "memory.h"
#include "registry.h"
#include "util.h"

#define DESC_MAX 320

/* One op as the call that would produce it, with every parameter shown
 * (defaults included), so the reader sees what actually runs. */
static void op_desc(const struct ts_op *op, char *buf, size_t n)
{
	const struct ts_opdef *d = ts_registry_of_kind((int)op->kind);

	if (d)
		d->describe(op, buf, n);
	else
		snprintf(buf, n, "output"); /* the fused tail, no row */
}

static void dim(int v, char *buf, size_t n)
{
	if (v)
		snprintf(buf, n, "%d", v);
	else
		snprintf(buf, n, "?");
}

/* "3x224x224 float32 nchw" or "224x224x3 uint8 nhwc"; '?' for a
 * dimension known only at run time. */
/* "device(cuda, float16, mean=[...], std=[...])" */
static void device_desc(const struct ts_plan_device *d, char *buf, size_t n)
{
	size_t at = (size_t)snprintf(buf, n, "device(cuda, %s, %s",
				     ts_dtype_name(d->dtype), ts_layout_name(d->layout));
	for (int k = 0; d->normalize && k < 2 && at < n; k++) {
		const float *v = k ? d->std : d->mean;
		at += (size_t)snprintf(buf + at, n - at, ", %s=[", k ? "std" : "mean");
		for (int i = 0; i < d->n_mean && at < n; i++)
			at += (size_t)snprintf(buf + at, n - at, "%s%g", i ? ", " : "",
					       (double)v[i]);
		if (at < n)
			at += (size_t)snprintf(buf + at, n - at, "]");
	}
	if (at < n)
		snprintf(buf + at, n - at, ")");
}

static void shape_desc(int h, int w, int c, enum ts_dtype t, enum ts_layout l,
		       char *buf, size_t n)
{
	char hs[16], ws[16];
	dim(h, hs, sizeof(hs));
	dim(w, ws, sizeof(ws));
	if (l == TS_LAYOUT_NCHW)
		snprintf(buf, n, "%dx%sx%s %s %s", c, hs, ws, ts_dtype_name(t),
			 ts_layout_name(l));
	else
		snprintf(buf, n, "%sx%sx%d %s %s", hs, ws, c, ts_dtype_name(t),
			 ts_layout_name(l));
}

static void op_shape(const struct ts_op *op, char *buf, size_t n)
{
	shape_desc(op->out_h, op->out_w, op->out_c, op->out_dtype,
		   op->out_layout, buf, n);
}

static void source_desc(const struct ts_source *s, char *buf, size_t n)
{
	const struct ts_opdef *d = ts_registry_of_source((int)s->kind);
	if (d && d->describe_source)
		d->describe_source(s, buf, n);
	else
		snprintf(buf, n, "?");
}

static void shard_desc(const struct ts_source *s, char *buf, size_t n)
{
	const char *drop = s->shard_drop ? "true" : "false";
	if (s->shard_count == -1)
		snprintf(buf, n, "shard(drop_last=%s) (the node from GROUP_RANK/GROUP_WORLD_SIZE "
			 "or SLURM_NODEID/SLURM_NNODES when it opens)", drop);
	else if (s->shard_env)
		snprintf(buf, n, "shard(index=%d, count=%d, drop_last=%s) (%s)",
			 s->shard_index, s->shard_count, drop, s->shard_env);
	else
		snprintf(buf, n, "shard(index=%d, count=%d, drop_last=%s)", s->shard_index,
			 s->shard_count, drop);
}

static void line(FILE *f, int indent, const char *left, const char *right)
{
	int pad = 60 - indent - (int)strlen(left);
	if (!*right) {
		fprintf(f, "%*s%s\n", indent, "", left);
		return;
	}
	fprintf(f, "%*s%s%*s  %s\n", indent, "", left, pad > 0 ? pad : 0, "",
		right);
}

/* Whether op's branches are numbered alternatives (random_choice), not
 * one chain (random_apply). */
static bool alternatives(const struct ts_op *op)
{
	const struct ts_opdef *d = ts_registry_of_kind(op->kind);
	return d && (d->flags & TS_OPF_ALTERNATIVES);
}

/* The generic walks' views of an op (plan.h's ts_op_branches, ts_op_parts). */
static size_t n_branches(const struct ts_op *op)
{
	size_t n;
	ts_op_branches(op, &n);
	return n;
}

static const struct ts_op_branch *branches(const struct ts_op *op)
{
	size_t n;
	return ts_op_branches(op, &n);
}

static size_t n_parts(const struct ts_op *op)
{
	size_t n;
	ts_op_parts(op, &n);
	return n;
}

static const struct ts_op *parts(const struct ts_op *op)
{
	size_t n;
	return ts_op_parts(op, &n);
}

/* The policy family: the ops inside random_apply (each after '| ') and
 * random_choice (its alternatives numbered '1: ', '2: ', ...), one a
 * line below the policy, with the shape after each; nested ones deeper. */
static void branch_lines(FILE *f, int indent, const struct ts_op *op);

/* views(): each group as written, "2 = " before its first op and "| "
 * under it before the others, the fused OUTPUT shown as its parts. */
static void views_lines(FILE *f, int indent, const struct ts_op *op)
{
	char a[DESC_MAX], b[DESC_MAX], pre[48];
	for (size_t k = 0; k < n_branches(op); k++) {
		const struct ts_op_branch *br = &branches(op)[k];
		int w = snprintf(NULL, 0, "%d", br->views);
		bool first = true;
		for (size_t i = 0; i < br->n_ops; i++) {
			const struct ts_op *q = &br->ops[i];
			bool out = ts_op_is_output(q);
			size_t np = out ? n_parts(q) : 1;
			for (size_t j = 0; j < np; j++) {
				const struct ts_op *x = out ? &parts(q)[j] : q;
				if (first)
					snprintf(pre, sizeof(pre), "%d = ", br->views);
				else
					snprintf(pre, sizeof(pre), "%*s| ", w + 1, "");
				first = false;
				size_t at = (size_t)snprintf(a, sizeof(a), "%s", pre);
				op_desc(x, a + at, sizeof(a) - at);
				op_shape(x, b, sizeof(b));
				line(f, indent, a, b);
				branch_lines(f, indent + w + 3, x);
			}
		}
	}
}

static void branch_lines(FILE *f, int indent, const struct ts_op *op)
{
	char a[DESC_MAX], b[DESC_MAX], pre[48];
	const struct ts_opdef *d = ts_registry_of_kind(op->kind);
	if (d && (d->flags & TS_OPF_VIEWS)) {
		views_lines(f, indent, op);
		return;
	}
	for (size_t k = 0; k < n_branches(op); k++) {
		const struct ts_op_branch *br = &branches(op)[k];
		for (size_t i = 0; i < br->n_ops; i++) {
			if (!alternatives(op)) {
				snprintf(pre, sizeof(pre), "| ");
			} else if (i == 0) {
				snprintf(pre, sizeof(pre), "%zu: ", k + 1);
			} else {
				/* under the number: "   | " */
				int w = snprintf(NULL, 0, "%zu", k + 1);
				snprintf(pre, sizeof(pre), "%*s| ", w + 1, "");
			}
			size_t at = (size_t)snprintf(a, sizeof(a), "%s", pre);
			op_desc(&br->ops[i], a + at, sizeof(a) - at);
			op_shape(&br->ops[i], b, sizeof(b));
			line(f, indent, a, b);
			branch_lines(f, indent + 4, &br->ops[i]);
		}
	}
}

static bool plan_views_op(const struct ts_op *op)
{
	const struct ts_opdef *d = ts_registry_of_kind(op->kind);
	return d && (d->flags & TS_OPF_VIEWS);
}

/* The decoded cache (runtime/engine/engine_cache.c): its size, what an
 * item's entry holds and what that costs, for a 500 x 375 photo. */
static void cache_lines(FILE *f, const struct ts_plan *p)
{
	char a[32], b[32], d[DESC_MAX];
	if (!p->mem_cache) {
		if (p->cache_bytes || p->cache_auto)
			fprintf(f, "cache: none (%s)\n",
				!ts_source_kind_encoded(p->source.kind)
					? "the source has nothing to decode"
				: ts_plan_tiles_banded(p) ? "tiles are decoded in bands of rows"
							  : "the budget leaves nothing for it");
		return;
	}
	const struct ts_op *dec = &p->ops[0], *fu = ts_op_fused(dec);
	uint64_t px = (uint64_t)(dec->decode.color == TS_COLOR_GRAY ? 1 : 3) *
		      (dec->decode.depth == 16 ? 2 : 1);
	ts_plan_format_size(p->mem_cache, a, sizeof(a));
	fprintf(f, "cache: %s%s of decoded pixels kept for the run: the items that fit, first come, "
		"never evicted (32 B an item of the data set for its table)\n", a,
		p->cache_auto ? " (auto: what the budget leaves)" : "");
	ts_plan_format_size(500 * 375 * px, b, sizeof(b));
	uint64_t per_gib = (1ull << 30) / (500 * 375 * px + 32);
	if (fu && strncmp(ts_op_kind_name(fu->kind), "random_", 7) == 0) {
		op_desc(fu, d, sizeof(d));
		fprintf(f, "       an item: its whole image before %s, at the DCT scale most of its "
			"crops decode at (%llu B a pixel at full scale: a 500x375 photo %s, %llu a "
			"GiB; a quarter at 4/8); a crop decoded at another scale reads its file\n",
			d, (unsigned long long)px, b, (unsigned long long)per_gib);
	} else if (fu) {
		op_desc(fu, d, sizeof(d));
		fprintf(f, "       an item: the decode's output with %s fused, and the ops after it "
			"that draw nothing (its size: that output's)\n", d);
	} else {
		fprintf(f, "       an item: its full decode, and the ops after it that draw nothing "
			"(%llu B a pixel: a 500x375 photo %s, %llu a GiB)\n",
			(unsigned long long)px, b, (unsigned long long)per_gib);
	}
}

static void format_text(FILE *f, const struct ts_plan *p)
{
	char a[DESC_MAX], b[DESC_MAX], c[64], d[64], e[64];

	fprintf(f, "pipeline %s (%s)\n", p->name, p->file);
	source_desc(&p->source, a, sizeof(a));
	line(f, 2, a, ts_source_kind_encoded(p->source.kind) ? "encoded" : "");
	if (p->source.shuffle) {
		snprintf(a, sizeof(a), "shuffle(seed=%llu)",
			 (unsigned long long)p->source.seed);
		line(f, 2, a, "");
	}
	if (p->source.shard_count != 0) {
		shard_desc(&p->source, a, sizeof(a));
		line(f, 2, a, "");
	}
	for (size_t i = 0; i < p->n_ops; i++) {
		const struct ts_op *op = &p->ops[i];
		if (ts_op_is_output(op) && i > 0 && plan_views_op(&p->ops[i - 1]))
			continue; /* the views write the slot: their groups' outputs */
		if (ts_op_is_output(op)) {
			line(f, 2, "output (fused, written into the ring slot):", "");
			for (size_t j = 0; j < n_parts(op); j++) {
				op_desc(&parts(op)[j], a, sizeof(a));
				op_shape(&parts(op)[j], b, sizeof(b));
				line(f, 4, a, b);
			}
			continue;
		}
		op_desc(op, a, sizeof(a));
		if (ts_op_fused(op)) {
			char fd[DESC_MAX + 4];
			line(f, 2, a, "fused:");
			fd[0] = '+';
			fd[1] = ' ';
			op_desc(ts_op_fused(op), fd + 2, sizeof(fd) - 2);
			op_shape(op, b, sizeof(b));
			line(f, 4, fd, b);
		} else {
			op_shape(op, b, sizeof(b));
			line(f, 2, a, b);
			branch_lines(f, 4, op);
		}
	}
	if (p->device.cuda) {
		device_desc(&p->device, a, sizeof(a));
		shape_desc(p->height, p->width, p->channels, p->device.dtype,
			   p->device.layout, b, sizeof(b));
		line(f, 2, a, b);
	}
	snprintf(a, sizeof(a), "batch(%d)", p->batch);
	line(f, 2, a, "");
	shape_desc(p->height, p->width, p->channels, p->dtype, p->layout, a,
		   sizeof(a));
	ts_plan_format_size(p->sample_bytes, c, sizeof(c));
	if (p->n_views) {
		/* views(): "2 x 3x224x224 float32 nchw + 6 x 3x96x96 ..." */
		size_t at = 0;
		for (int v = 0, k; v < p->n_views && at < sizeof(a); v += k) {
			const struct ts_plan_view *pv = &p->views[v];
			for (k = 1; v + k < p->n_views && p->views[v + k].group == pv->group; k++)
				;
			shape_desc(pv->height, pv->width, pv->channels, pv->dtype, pv->layout,
				   b, sizeof(b));
			at += (size_t)snprintf(a + at, sizeof(a) - at, "%s%d x %s",
					       v ? " + " : "", k, b);
		}
		fprintf(f, "sample: %d views: %s, %zu bytes (%s)", p->n_views, a,
			p->sample_bytes, c);
	} else {
		fprintf(f, "sample: %s, %zu bytes (%s)", a, p->sample_bytes, c);
	}
	if (p->expands) {
		if (p->max_out_per_in > 0)
			fprintf(f, ", up to %d per source image", p->max_out_per_in);
		else
			fprintf(f, ", a variable number per source image");
	}
	fprintf(f, "\n");
	if (p->device.cuda) {
		/* the ring's slots plus the mirror of its first half, which
		 * keeps every batch one contiguous device span */
		uint64_t slots = (uint64_t)(p->ring_samples > 0 ? p->ring_samples : 0);
		uint64_t dev_ring = (slots + slots / 2) * p->device.sample_bytes;
		ts_plan_format_size(dev_ring, c, sizeof(c));
		fprintf(f, "device: cuda, %zu bytes per sample, device ring %s (GPU memory, not in the total below)\n",
			p->device.sample_bytes, c);
	}
	fprintf(f, "serve: %s, socket %s%s%s, epochs %d%s\n",
		p->served ? "yes" : "no (defaults)", p->socket,
		p->group ? ", group " : "", p->group ? p->group : "", p->epochs,
		p->epochs == 0 ? " (forever)" : "");
	if (p->threads)
		snprintf(b, sizeof(b), "%d", p->threads);
	else
		snprintf(b, sizeof(b), "auto");
	fprintf(f, "       ring %lld samples (%lld batches of %d), threads %s, on_error %s, queue_depth %d\n",
		(long long)p->ring_samples,
		(long long)(p->batch > 0 ? p->ring_samples / p->batch : 0),
		p->batch, b, p->on_error == TS_ON_ERROR_SKIP ? "skip" : "fail",
		p->queue_depth);
	if (p->ring_asked > 1 && p->sample_bytes) {
		/* the ring's double map needs whole pages (ts_plan_ring_layout) */
		const unsigned long long stride =
			(unsigned long long)ts_plan_ring_stride(p, p->ring_samples);
		if (p->ring_samples > p->ring_asked)
			fprintf(f, "       ring rounded up from %lld samples: %llu-byte slots fill "
				"whole pages only %llu at a time\n", (long long)p->ring_asked,
				stride, (unsigned long long)ts_plan_ring_unit(p, p->ring_asked));
		if (stride > p->sample_bytes)
			fprintf(f, "       ring slots padded from %zu to %llu bytes, so that %lld "
				"samples fill whole pages\n", p->sample_bytes, stride,
				(long long)p->ring_samples);
	}
	ts_plan_format_size(p->mem_total, a, sizeof(a));
	ts_plan_format_size(p->mem_ring, c, sizeof(c));
	ts_plan_format_size(ts_plan_ring_stride(p, p->ring_samples) + 16, d, sizeof(d));
	fprintf(f, "memory: %s = ring %s (%lld samples x %s)", a, c,
		(long long)p->ring_samples, d);
	ts_plan_format_size(p->mem_scratch, c, sizeof(c));
	ts_plan_format_size(p->mem_threads ? p->mem_scratch / (uint64_t)p->mem_threads : 0,
			    d, sizeof(d));
	ts_plan_format_size(p->mem_io, e, sizeof(e));
	fprintf(f, " + scratch %s (%d threads x %s) + io %s", c, p->mem_threads,
		d, e);
	ts_plan_format_size(p->mem_process, e, sizeof(e));
	fprintf(f, " + process %s", e);
	if (p->mem_cache) {
		ts_plan_format_size(p->mem_cache, e, sizeof(e));
		fprintf(f, " + cache %s", e);
	}
	fprintf(f, "\n");
	if (p->memory_budget) {
		ts_plan_format_size(p->memory_budget, a, sizeof(a));
		fprintf(f, "budget: %s (%s)\n", a,
			p->mem_total <= p->memory_budget ? "fits" : "exceeded");
	} else {
		fprintf(f, "budget: none\n");
	}
	cache_lines(f, p);
}

/* A dot string literal: quotes and backslashes escaped. */
static void dot_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if (*s == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*s, f);
	}
	fputc('"', f);
}

static void dot_node(FILE *f, const char *id, const char *label,
		     const char *attrs)
{
	fprintf(f, "  %s [label=", id);
	dot_str(f, label);
	fprintf(f, "%s%s];\n", attrs ? ", " : "", attrs ? attrs : "");
}

/* The policy family in a dot label: each branch op on a line of its
 * own, as the text form shows them. */
static size_t branch_label(char *label, size_t n, size_t at, int depth,
			   const struct ts_op *op)
{
	char a[DESC_MAX];
	if (plan_views_op(op)) {
		/* views(): each group as written, "2 = " before its first op,
		 * its fused output as its parts */
		for (size_t k = 0; k < n_branches(op) && at < n; k++) {
			const struct ts_op_branch *br = &branches(op)[k];
			bool first = true;
			for (size_t i = 0; i < br->n_ops && at < n; i++) {
				const struct ts_op *q = &br->ops[i];
				size_t np = ts_op_is_output(q) ? n_parts(q) : 1;
				for (size_t j = 0; j < np && at < n; j++) {
					const struct ts_op *x = ts_op_is_output(q) ? &parts(q)[j] : q;
					op_desc(x, a, sizeof(a));
					if (first)
						at += (size_t)snprintf(label + at, n - at, "\n%*s%d = %s",
								       2 * depth, "", br->views, a);
					else
						at += (size_t)snprintf(label + at, n - at, "\n%*s| %s",
								       2 * depth, "", a);
					first = false;
					if (at < n)
						at = branch_label(label, n, at, depth + 2, x);
				}
			}
		}
		return at;
	}
	for (size_t k = 0; k < n_branches(op) && at < n; k++)
		for (size_t i = 0; i < branches(op)[k].n_ops && at < n; i++) {
			const struct ts_op *q = &branches(op)[k].ops[i];
			op_desc(q, a, sizeof(a));
			if (alternatives(op) && i == 0)
				at += (size_t)snprintf(label + at, n - at, "\n%*s%zu: %s",
						       2 * depth, "", k + 1, a);
			else
				at += (size_t)snprintf(label + at, n - at, "\n%*s| %s",
						       2 * depth, "", a);
			if (at < n)
				at = branch_label(label, n, at, depth + 1, q);
		}
	return at;
}

static void format_dot(FILE *f, const struct ts_plan *p)
{
	char a[DESC_MAX], b[DESC_MAX], label[4 * DESC_MAX], id[32];
	size_t at;

	fprintf(f, "digraph ");
	dot_str(f, p->name);
	fprintf(f, " {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
	source_desc(&p->source, a, sizeof(a));
	at = (size_t)snprintf(label, sizeof(label), "%s", a);
	if (p->source.shuffle && at < sizeof(label))
		at += (size_t)snprintf(label + at, sizeof(label) - at, "\nshuffle(seed=%llu)",
				       (unsigned long long)p->source.seed);
	if (p->source.shard_count != 0 && at < sizeof(label)) {
		shard_desc(&p->source, b, sizeof(b));
		snprintf(label + at, sizeof(label) - at, "\n%s", b);
	}
	dot_node(f, "source", label, "shape=folder");
	for (size_t i = 0; i < p->n_ops; i++) {
		const struct ts_op *op = &p->ops[i];
		snprintf(id, sizeof(id), "op%zu", i);
		if (ts_op_is_output(op) && i > 0 && plan_views_op(&p->ops[i - 1]))
			continue; /* the views write the slot */
		if (ts_op_is_output(op)) {
			at = (size_t)snprintf(label, sizeof(label), "output (fused)");
			for (size_t j = 0; j < n_parts(op) && at < sizeof(label); j++) {
				op_desc(&parts(op)[j], a, sizeof(a));
				at += (size_t)snprintf(label + at, sizeof(label) - at,
						       "\n%s", a);
			}
		} else {
			op_desc(op, a, sizeof(a));
			at = (size_t)snprintf(label, sizeof(label), "%s", a);
			at = branch_label(label, sizeof(label), at, 1, op);
			if (ts_op_fused(op) && at < sizeof(label)) {
				op_desc(ts_op_fused(op), b, sizeof(b));
				at += (size_t)snprintf(label + at, sizeof(label) - at,
						       "\n+ %s (fused)", b);
			}
		}
		op_shape(op, b, sizeof(b));
		if (at < sizeof(label))
			snprintf(label + at, sizeof(label) - at, "\n%s", b);
		dot_node(f, id, label,
			 ts_op_fused(op) || ts_op_is_output(op)
				 ? "style=filled, fillcolor=\"#e8f0ff\"" : NULL);
	}
	snprintf(label, sizeof(label), "batch(%d)", p->batch);
	dot_node(f, "batch", label, NULL);
	ts_plan_format_size(p->mem_ring, a, sizeof(a));
	snprintf(label, sizeof(label), "ring: %lld samples, %s",
		 (long long)p->ring_samples, a);
	dot_node(f, "ring", label, "shape=cylinder");
	fprintf(f, "  source");
	for (size_t i = 0; i < p->n_ops; i++)
		if (!(ts_op_is_output(&p->ops[i]) && i > 0 && plan_views_op(&p->ops[i - 1])))
			fprintf(f, " -> op%zu", i);
	fprintf(f, " -> batch -> ring;\n}\n");
}

TS_EXPORT char *ts_plan_format(const struct ts_plan *plan, bool dot)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (dot)
		format_dot(f, plan);
	else
		format_text(f, plan);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
