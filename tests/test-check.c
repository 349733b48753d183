/*
 * test-check.c - the checker, the registry and the lowering: shape
 * inference per stage, fusion, serve settings, the memory estimate and
 * the errors (message and column). Diagnostic wording as a whole is
 * covered by the golden files (golden-diag.sh); here the values.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsl.h"
#include "lower.h"
#include "memory.h"
#include "kernel.h"
#include "registry.h"

/* Compile src; on success return the plan, else NULL with *d kept for
 * inspection (caller finis it). */
static struct ts_plan *compile(const char *src, const char *pipeline,
			       struct ts_diags *d, int *rc)
{
	struct ts_plan *plan = NULL;
	ts_diags_init(d, "t.ts", src, strlen(src));
	*rc = ts_dsl_compile(src, strlen(src), "dir/t.ts", pipeline, d, &plan);
	return plan;
}

static struct ts_plan *compile_ok(const char *src)
{
	struct ts_diags d;
	int rc;
	struct ts_plan *plan = compile(src, NULL, &d, &rc);
	if (rc != 0) {
		char *text = ts_diags_render(&d);
		ck_abort_msg("compile failed (%d):\n%s", rc, text ? text : "");
	}
	ts_diags_fini(&d);
	ck_assert_ptr_nonnull(plan);
	return plan;
}

/* ---- shape inference ------------------------------------------------ */

static const struct {
	const char *src;
	int h, w, c;
	enum ts_dtype dtype;
	enum ts_layout layout;
	size_t bytes;
} shapes[] = {
	{ "pipeline p = folder(\"x\") | decode(rgb) | random_resized_crop(224)"
	  " | normalize([0.5,0.5,0.5],[0.5,0.5,0.5]) | to(float32, nchw) | batch(8)",
	  224, 224, 3, TS_DTYPE_F32, TS_LAYOUT_NCHW, 224 * 224 * 3 * 4 },
	{ "pipeline p = folder(\"x\") | decode(gray, depth = 16) | center_crop(100, 50) | batch(2)",
	  100, 50, 1, TS_DTYPE_U16, TS_LAYOUT_NHWC, 100 * 50 * 2 },
	{ "pipeline p = synthetic([48, 64], channels = 1) | to(float16) | batch(1)",
	  48, 64, 1, TS_DTYPE_F16, TS_LAYOUT_NHWC, 48 * 64 * 2 },
	/* resize(N) of a fixed image keeps the aspect ratio (shorter side) */
	{ "pipeline p = synthetic([100, 200]) | resize(50) | batch(1)",
	  50, 100, 3, TS_DTYPE_U8, TS_LAYOUT_NHWC, 50 * 100 * 3 },
	{ "pipeline p = synthetic([300, 100]) | resize(50) | batch(1)",
	  150, 50, 3, TS_DTYPE_U8, TS_LAYOUT_NHWC, 150 * 50 * 3 },
	{ "pipeline p = synthetic(64) | grayscale | to(uint8, nchw) | batch(4)",
	  64, 64, 1, TS_DTYPE_U8, TS_LAYOUT_NCHW, 64 * 64 },
	{ "pipeline p = synthetic(64, depth = 16) | to(uint8) | batch(4)",
	  64, 64, 3, TS_DTYPE_U8, TS_LAYOUT_NHWC, 64 * 64 * 3 },
	{ "pipeline p = folder(\"x\") | decode(gray, depth = 16) | tile(512) | filter | to(uint8) | batch(8)",
	  512, 512, 1, TS_DTYPE_U8, TS_LAYOUT_NHWC, 512 * 512 },
	/* let names resolve inside lists and as sizes */
	{ "let s = 32\nlet m = 0.5\npipeline p = synthetic(s) | normalize([m, m, m], [m, m, m]) | batch(s)",
	  32, 32, 3, TS_DTYPE_F32, TS_LAYOUT_NHWC, 32 * 32 * 3 * 4 },
};

START_TEST(test_shape)
{
	struct ts_plan *p = compile_ok(shapes[_i].src);
	ck_assert_int_eq(p->height, shapes[_i].h);
	ck_assert_int_eq(p->width, shapes[_i].w);
	ck_assert_int_eq(p->channels, shapes[_i].c);
	ck_assert_int_eq(p->dtype, shapes[_i].dtype);
	ck_assert_int_eq(p->layout, shapes[_i].layout);
	ck_assert_uint_eq(p->sample_bytes, shapes[_i].bytes);
	/* the last op is always OUTPUT, ending in a TO naming the result */
	ck_assert_uint_ge(p->n_ops, 1);
	const struct ts_op *out = &p->ops[p->n_ops - 1];
	ck_assert_int_eq(out->kind, TS_OP_OUTPUT);
	ck_assert_uint_ge(out->output.n_parts, 1);
	ck_assert_int_eq(out->output.parts[out->output.n_parts - 1].kind, TS_OP_TO);
	ck_assert_int_eq(out->output.parts[out->output.n_parts - 1].to.dtype, shapes[_i].dtype);
	ck_assert_int_eq(out->output.parts[out->output.n_parts - 1].to.layout, shapes[_i].layout);
	ck_assert_int_eq(out->out_h, shapes[_i].h);
	ck_assert_int_eq(out->out_c, shapes[_i].c);
	ts_plan_destroy(p);
}
END_TEST

START_TEST(test_shape_variable)
{
	/* A pipeline that is neither batched nor served may end variable. */
	struct ts_plan *p = compile_ok("pipeline p = folder(\"x\") | decode(rgb) | resize(256)");
	ck_assert_int_eq(p->height, 0);
	ck_assert_int_eq(p->width, 0);
	ck_assert_int_eq(p->channels, 3);
	ck_assert_uint_eq(p->sample_bytes, 0);
	ck_assert_int_eq(p->batch, 1);
	ts_plan_destroy(p);
}
END_TEST

/* ---- fusion ---------------------------------------------------------- */

START_TEST(test_fuse_decode_crop)
{
	struct ts_plan *p = compile_ok(
		"pipeline p = folder(\"x\") | decode(rgb) | random_resized_crop(224, scale = 0.25..0.5)"
		" | color_jitter(0.4) | flip(vertical, p = 0.25)"
		" | normalize([0.5,0.5,0.5],[0.5,0.5,0.5]) | to(float32, nchw) | batch(8)");
	ck_assert_uint_eq(p->n_ops, 3);
	ck_assert_int_eq(p->ops[0].kind, TS_OP_DECODE);
	ck_assert_ptr_nonnull(p->ops[0].decode.fused);
	ck_assert_int_eq(p->ops[0].decode.fused->kind, TS_OP_RANDOM_RESIZED_CROP);
	ck_assert_int_eq(p->ops[0].decode.fused->crop.size_h, 224);
	ck_assert_double_eq(p->ops[0].decode.fused->crop.scale_lo, 0.25);
	ck_assert_double_eq_tol(p->ops[0].decode.fused->crop.ratio_hi, 4.0 / 3.0, 1e-12);
	ck_assert_int_eq(p->ops[0].decode.fused->index, 2);
	ck_assert_int_eq(p->ops[0].out_h, 224);
	/* color_jitter is not fusable: OUTPUT holds only what follows it */
	ck_assert_int_eq(p->ops[1].kind, TS_OP_COLOR_JITTER);
	ck_assert_double_eq(p->ops[1].jitter.brightness, 0.4);
	ck_assert_int_eq(p->ops[1].index, 3);
	ck_assert_int_eq(p->ops[2].kind, TS_OP_OUTPUT);
	ck_assert_uint_eq(p->ops[2].output.n_parts, 3);
	ck_assert_int_eq(p->ops[2].output.parts[0].kind, TS_OP_FLIP);
	ck_assert(!p->ops[2].output.parts[0].flip.horizontal);
	ck_assert_double_eq(p->ops[2].output.parts[0].flip.p, 0.25);
	ck_assert_int_eq(p->ops[2].output.parts[0].index, 4);
	ck_assert_int_eq(p->ops[2].output.parts[1].kind, TS_OP_NORMALIZE);
	ck_assert_int_eq(p->ops[2].output.parts[1].norm.n_mean, 3);
	ck_assert_int_eq(p->ops[2].output.parts[2].kind, TS_OP_TO);
	ck_assert_int_eq(p->ops[2].output.parts[2].to.layout, TS_LAYOUT_NCHW);
	ts_plan_destroy(p);
}
END_TEST

START_TEST(test_fuse_val)
{
	struct ts_plan *p = compile_ok(
		"pipeline p = folder(\"x\") | decode(rgb) | resize(256) | center_crop(224) | batch(8)");
	ck_assert_uint_eq(p->n_ops, 2);
	ck_assert_int_eq(p->ops[0].decode.fused->kind, TS_OP_RESIZE);
	ck_assert_int_eq(p->ops[0].decode.fused->resize.size_h, 256);
	ck_assert_int_eq(p->ops[0].decode.fused->resize.size_w, 0); /* shorter side */
	ck_assert_int_eq(p->ops[0].out_h, 0);          /* still variable */
	ck_assert_int_eq(p->ops[1].kind, TS_OP_OUTPUT);
	ck_assert_uint_eq(p->ops[1].output.n_parts, 2);
	ck_assert_int_eq(p->ops[1].output.parts[0].kind, TS_OP_CENTER_CROP);
	/* an implicit TO names the final uint8 nhwc */
	ck_assert_int_eq(p->ops[1].output.parts[1].kind, TS_OP_TO);
	ck_assert_int_eq(p->ops[1].output.parts[1].index, -1);
	ck_assert_int_eq(p->ops[1].output.parts[1].to.dtype, TS_DTYPE_U8);
	ts_plan_destroy(p);
}
END_TEST

START_TEST(test_no_fusion)
{
	struct ts_plan *p = compile_ok("pipeline p = synthetic(8) | batch(2)");
	ck_assert_uint_eq(p->n_ops, 1);
	ck_assert_int_eq(p->ops[0].kind, TS_OP_OUTPUT);
	ck_assert_uint_eq(p->ops[0].output.n_parts, 1);
	ck_assert_int_eq(p->ops[0].output.parts[0].kind, TS_OP_TO);
	ck_assert_int_eq(p->ops[0].out_h, 8);
	ts_plan_destroy(p);
}
END_TEST

/* The output stage runs geometry before point ops: a flip ahead of a
 * resize must stay a stage of its own. */
START_TEST(test_fuse_flip_before_resize)
{
	struct ts_plan *p = compile_ok(
		"pipeline p = folder(\"x\") | decode(rgb) | flip(horizontal) | resize(256)"
		" | center_crop(224) | to(uint8) | batch(4)");
	ck_assert_uint_eq(p->n_ops, 3);
	ck_assert_int_eq(p->ops[0].kind, TS_OP_DECODE);
	ck_assert_ptr_null(p->ops[0].decode.fused);
	ck_assert_int_eq(p->ops[1].kind, TS_OP_FLIP);
	ck_assert_int_eq(p->ops[2].kind, TS_OP_OUTPUT);
	ck_assert_uint_eq(p->ops[2].output.n_parts, 3);
	ck_assert_int_eq(p->ops[2].output.parts[0].kind, TS_OP_RESIZE);
	ck_assert_int_eq(p->ops[2].output.parts[1].kind, TS_OP_CENTER_CROP);
	ck_assert_int_eq(p->ops[2].output.parts[2].kind, TS_OP_TO);
	ts_plan_destroy(p);
}
END_TEST

/* ---- source, modifiers, serve ----------------------------------------- */

START_TEST(test_source)
{
	struct ts_plan *p = compile_ok(
		"pipeline p = folder(\"data\", ext = [\".JPG\", \".png\"]) | shuffle(seed = 7)"
		" | shard(1, 4, drop_last = true) | decode | center_crop(8) | batch(2)");
	ck_assert_int_eq(p->source.kind, TS_SRC_FOLDER);
	ck_assert_str_eq(p->source.path, "data");
	ck_assert_str_eq(p->source.base_dir, "dir");
	ck_assert_uint_eq(p->source.n_exts, 2);
	ck_assert_str_eq(p->source.exts[0], ".jpg");
	ck_assert_int_eq(p->source.shard_index, 1);
	ck_assert_int_eq(p->source.shard_count, 4);
	ck_assert(p->source.shard_drop);
	ck_assert(p->source.shuffle);
	ck_assert_uint_eq(p->source.seed, 7);
	ck_assert_str_eq(p->name, "p");
	ck_assert_str_eq(p->file, "dir/t.ts");
	ts_plan_destroy(p);

	p = compile_ok("pipeline q = synthetic(height = 10, width = 20, count = 5, classes = 3) | shard | batch(1)");
	ck_assert_int_eq(p->source.kind, TS_SRC_SYNTHETIC);
	ck_assert_int_eq(p->source.height, 10);
	ck_assert_int_eq(p->source.width, 20);
	ck_assert_int_eq(p->source.count, 5);
	ck_assert_int_eq(p->source.classes, 3);
	ck_assert_int_eq(p->source.channels, 3);
	ck_assert_int_eq(p->source.shard_index, -1);
	ck_assert_int_eq(p->source.shard_count, -1);
	ck_assert(!p->source.shard_drop);
	ck_assert(!p->source.shuffle);
	ts_plan_destroy(p);
}
END_TEST

START_TEST(test_serve)
{
	struct ts_plan *p = compile_ok(
		"pipeline a = synthetic(8) | batch(4)\n"
		"pipeline b = synthetic(16) | batch(10)\n"
		"serve b { ring = 3 batches threads = 2 epochs = 0 on_error = skip"
		" group = \"ml\" queue_depth = 8 memory = 2 GiB stall_timeout = 2.5"
		" consumers = 3 job_timeout = 7 }\n");
	/* the served pipeline is chosen when none is named */
	ck_assert_str_eq(p->name, "b");
	ck_assert(p->served);
	/* 3 batches of 10 = 30, rounded as the ring does: 768-byte samples
	 * come 16 to a whole number of pages */
	ck_assert_int_eq(p->ring_samples, 32);
	ck_assert_int_eq(p->threads, 2);
	ck_assert_int_eq(p->epochs, 0);
	ck_assert_int_eq(p->on_error, TS_ON_ERROR_SKIP);
	ck_assert_str_eq(p->group, "ml");
	ck_assert_int_eq(p->queue_depth, 8);
	ck_assert_uint_eq(p->memory_budget, 2ull << 30);
	ck_assert_double_eq(p->stall_timeout_s, 2.5);
	ck_assert_double_eq(p->job_timeout_s, 7);
	ck_assert_int_eq(p->max_consumers, 3);
	/* the default socket: in a folder of this user's only */
	char want[128];
	char *xdg = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
	if (xdg && xdg[0] == '/')
		snprintf(want, sizeof(want), "%s/tsrun/b.sock", xdg);
	else
		snprintf(want, sizeof(want), "/tmp/tsrun-%u/b.sock", (unsigned)geteuid());
	ck_assert_str_eq(p->socket, want);
	ck_assert(p->socket_private);
	ts_plan_destroy(p);
	setenv("XDG_RUNTIME_DIR", "/run/user/4242", 1);
	p = compile_ok("pipeline b = synthetic(16) | batch(10)\n");
	ck_assert_str_eq(p->socket, "/run/user/4242/tsrun/b.sock");
	ts_plan_destroy(p);
	unsetenv("XDG_RUNTIME_DIR");
	p = compile_ok("pipeline b = synthetic(16) | batch(10)\n");
	snprintf(want, sizeof(want), "/tmp/tsrun-%u/b.sock", (unsigned)geteuid());
	ck_assert_str_eq(p->socket, want);
	ts_plan_destroy(p);
	if (xdg)
		setenv("XDG_RUNTIME_DIR", xdg, 1);
	free(xdg);
	p = compile_ok("pipeline b = synthetic(16) | batch(10)\n"
		       "serve b { socket = \"/tmp/x.sock\" }\n");
	ck_assert_str_eq(p->socket, "/tmp/x.sock");
	ck_assert(!p->socket_private);
	ts_plan_destroy(p);

	struct ts_diags d;
	int rc;
	p = compile("pipeline a = synthetic(8) | batch(4)\npipeline b = synthetic(16) | batch(10)\n",
		    "a", &d, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(p->name, "a");
	ck_assert(!p->served);
	/* default: 8 batches = 32, rounded as the ring does (192-byte
	 * samples: 64 to whole pages) */
	ck_assert_int_eq(p->ring_samples, 64);
	ck_assert_int_eq(p->epochs, 1);
	ck_assert_int_eq(p->threads, 0);
	ck_assert_double_eq(p->stall_timeout_s, 120);
	ck_assert_double_eq(p->job_timeout_s, -1);  /* follows stall_timeout */
	ck_assert_int_eq(p->max_consumers, 64);
	ck_assert_ptr_null(p->group);
	ts_plan_destroy(p);
	ts_diags_fini(&d);

	p = compile_ok("pipeline s = synthetic(8) | batch(4)\nserve s { ring = 100 samples socket = \"/x\" }");
	ck_assert_int_eq(p->ring_samples, 128); /* 100, in units of 64 */
	ck_assert_str_eq(p->socket, "/x");
	ts_plan_destroy(p);
}
END_TEST

/* ---- memory estimate ------------------------------------------------- */

/* The decoded cache in the plan: its size counted whole (and a worker's
 * frame besides its images), auto what the budget leaves in whole MiB,
 * none for a source with nothing to decode. */
START_TEST(test_estimate_cache)
{
	const char *rrc = "pipeline p = folder(\"x\") | decode | random_resized_crop(224)"
			  " | to(float32, nchw) | batch(256)\n";
	char text[512];
	snprintf(text, sizeof(text), "%sserve p { threads = 4 cache = 3 GiB }", rrc);
	struct ts_plan *p = compile_ok(text);
	ck_assert_uint_eq(p->cache_bytes, 3ull << 30);
	ck_assert(!p->cache_auto);
	ck_assert_uint_eq(p->mem_cache, 3ull << 30);
	ck_assert_uint_eq(p->mem_scratch, 4ull * (16 + 8) * 1024 * 1024);
	ck_assert_uint_eq(p->mem_total, p->mem_ring + p->mem_scratch + p->mem_io +
					p->mem_process + p->mem_cache);
	ts_plan_destroy(p);
	snprintf(text, sizeof(text), "%sserve p { threads = 4 memory = 8 GiB cache = auto }", rrc);
	p = compile_ok(text);
	ck_assert(p->cache_auto);
	uint64_t rest = p->mem_ring + p->mem_scratch + p->mem_io + p->mem_process;
	ck_assert_uint_eq(p->mem_cache, ((8ull << 30) - rest) / (1u << 20) * (1u << 20));
	ck_assert_uint_le(p->mem_total, 8ull << 30);
	ck_assert_uint_gt(p->mem_total, (8ull << 30) - (1u << 20));
	ts_plan_destroy(p);
	snprintf(text, sizeof(text), "%sserve p { cache = off }", rrc);
	p = compile_ok(text);
	ck_assert_uint_eq(p->mem_cache, 0);
	ts_plan_destroy(p);
	p = compile_ok("pipeline p = synthetic(64) | batch(1)\nserve p { cache = 1 GiB }");
	ck_assert_uint_eq(p->mem_cache, 0);
	ts_plan_destroy(p);
}
END_TEST

START_TEST(test_estimate)
{
	struct ts_plan *p = compile_ok(
		"pipeline p = folder(\"x\") | decode | random_resized_crop(224)"
		" | to(float32, nchw) | batch(256)\nserve p { threads = 4 }");
	uint64_t slot = 224 * 224 * 3 * 4 + 16;
	/* header page + samples + labels and positions */
	uint64_t ring = 4096 + (2048 * (slot - 16) + 4095) / 4096 * 4096 +
			(2048 * 16 + 4095) / 4096 * 4096;
	ck_assert_uint_eq(p->mem_ring, ring);
	ck_assert_int_eq(p->mem_threads, 4);
	ck_assert_uint_eq(p->mem_scratch, 4ull * 16 * 1024 * 1024);
	ck_assert_uint_eq(p->mem_io, 64ull * 1024 * 1024);
	ck_assert_uint_eq(p->mem_process, 4ull * 1024 * 1024);
	ck_assert_uint_eq(p->mem_total, p->mem_ring + p->mem_scratch + p->mem_io + p->mem_process);
	ts_plan_destroy(p);

	/* auto threads: the estimate follows the core count it is given;
	 * a synthetic source reads nothing and decodes nothing */
	p = compile_ok("pipeline p = synthetic(2048) | batch(1)");
	ts_plan_estimate(p, 3);
	ck_assert_int_eq(p->mem_threads, 3);
	ck_assert_uint_eq(p->mem_scratch, 3ull * 2 * 2048 * 2048 * 3);
	ck_assert_uint_eq(p->mem_io, 0);
	ts_plan_destroy(p);
}
END_TEST

START_TEST(test_budget)
{
	struct ts_diags d;
	int rc;
	struct ts_plan *p = compile(
		"pipeline p = synthetic(224) | to(float32) | batch(256)\n"
		"serve p { ring = 8 batches threads = 1 memory = 100 MiB }", NULL, &d, &rc);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(rc, TS_E_CHECK);
	ck_assert_uint_eq(d.n_errors, 1);
	ck_assert_int_eq(d.items[0].loc.first_line, 2);
	ck_assert_int_eq(d.items[0].loc.first_column, 49);
	ck_assert_ptr_nonnull(strstr(d.items[0].msg, "plan needs"));
	ck_assert_ptr_nonnull(strstr(d.items[0].msg, "2048 samples"));
	ck_assert_ptr_nonnull(strstr(d.items[0].msg, "budget is 100 MiB"));
	ck_assert_ptr_nonnull(strstr(d.items[0].hint, "ring"));
	ts_diags_fini(&d);
}
END_TEST

/* The hint of a plan over budget names the term that dominates and the
 * setting that shrinks it, with a value that fits: the plan with that
 * value must then pass. */
static const struct {
	const char *src;       /* ends with the serve block's open settings */
	const char *setting;   /* what the hint must name: "queue_depth = " */
	const char *unit;      /* after the value in the hint and the setting */
} hints[] = {
	{ "pipeline p = folder(\"x\") | decode | center_crop(224) | batch(32)\n"
	  "serve p { ring = 80 samples threads = 1 memory = 64 MiB ",
	  "queue_depth = ", "" },
	{ "pipeline p = folder(\"x\") | decode | center_crop(64) | batch(8)\n"
	  "serve p { ring = 2 batches queue_depth = 4 memory = 100 MiB ",
	  "threads = ", "" },
	{ "pipeline p = synthetic(224) | to(float32) | batch(256)\n"
	  "serve p { threads = 1 memory = 1 GiB ",
	  "ring = ", " batches" },
	{ "pipeline p = synthetic(224) | to(float32) | batch(1)\n"
	  "serve p { threads = 1 memory = 8 MiB ",
	  "ring = ", " samples" },
};

START_TEST(test_budget_hint)
{
	struct ts_diags d;
	char src[512], fix[512];
	const char *h;
	long v;
	int rc;

	/* as given, threads = 16 where the hint asks for fewer */
	snprintf(src, sizeof(src), "%s%s}", hints[_i].src,
		 strcmp(hints[_i].setting, "threads = ") == 0 ? "threads = 16 " : "");
	ck_assert_ptr_null(compile(src, NULL, &d, &rc));
	ck_assert_int_eq(rc, TS_E_CHECK);
	ck_assert_uint_eq(d.n_errors, 1);
	h = strstr(d.items[0].hint, hints[_i].setting);
	ck_assert_msg(h, "hint '%s' lacks '%s'", d.items[0].hint, hints[_i].setting);
	v = strtol(h + strlen(hints[_i].setting), NULL, 10);
	ck_assert_int_ge(v, 1);
	ck_assert_ptr_nonnull(strstr(d.items[0].hint, " fits) or raise memory to "));
	ts_diags_fini(&d);

	snprintf(fix, sizeof(fix), "%s%s%ld%s }", hints[_i].src, hints[_i].setting,
		 v, hints[_i].unit);
	struct ts_plan *p = compile_ok(fix);
	ck_assert_uint_le(p->mem_total, p->memory_budget);
	ts_plan_destroy(p);
}
END_TEST

/* The hint's "raise memory to N MiB" is enough as it stands; when the
 * dominant term cannot shrink far enough, the hint says so. */
START_TEST(test_budget_hint_limits)
{
	struct ts_diags d;
	int rc;
	const char *at;

	ck_assert_ptr_null(compile(
		"pipeline p = folder(\"x\") | decode | center_crop(64) | batch(8)\n"
		"serve p { ring = 2 batches threads = 1 queue_depth = 4 memory = 8 MiB }",
		NULL, &d, &rc));
	ck_assert_str_eq(d.items[0].hint,
			 "scratch dominates and threads is already 1: raise memory to 25 MiB");
	ts_diags_fini(&d);
	struct ts_plan *p = compile_ok(
		"pipeline p = folder(\"x\") | decode | center_crop(64) | batch(8)\n"
		"serve p { ring = 2 batches threads = 1 queue_depth = 4 memory = 25 MiB }");
	ts_plan_destroy(p);

	ck_assert_ptr_null(compile(
		"pipeline p = synthetic(224) | to(float32) | batch(256)\n"
		"serve p { threads = 1 memory = 10 MiB }", NULL, &d, &rc));
	at = strstr(d.items[0].hint, "even a ring of one batch does not fit");
	ck_assert_msg(at, "hint: %s", d.items[0].hint);
	ts_diags_fini(&d);
}
END_TEST

/* A file may serve several pipelines: the plan lists them all, so that a
 * caller that was not told which to serve can refuse. */
START_TEST(test_served_list)
{
	struct ts_plan *p = compile_ok(
		"pipeline a = synthetic(8) | batch(4)\n"
		"pipeline b = synthetic(8) | batch(4)\n"
		"pipeline c = synthetic(8) | batch(4)\n"
		"serve b { socket = \"/tmp/b.sock\" }\n"
		"serve a { socket = \"/tmp/a.sock\" }\n");
	ck_assert_str_eq(p->name, "b"); /* the first served */
	ck_assert_int_eq(p->n_served, 2);
	ck_assert_str_eq(p->served_names, "b, a");
	ts_plan_destroy(p);

	p = compile_ok("pipeline a = synthetic(8) | batch(4)\nserve a { }");
	ck_assert_int_eq(p->n_served, 1);
	ck_assert_str_eq(p->served_names, "a");
	ts_plan_destroy(p);

	p = compile_ok("pipeline a = synthetic(8) | batch(4)");
	ck_assert_int_eq(p->n_served, 0);
	ck_assert_ptr_null(p->served_names);
	ts_plan_destroy(p);
}
END_TEST

/* ---- errors: count, position, message ------------------------------- */

static const struct {
	const char *src;
	size_t n_errors;
	int line, col;      /* of the first error */
	const char *msg;    /* a substring of the first message */
} errors[] = {
	{ "pipeline p = synthetic(8) | flipp | batch(1)", 1, 1, 29, "unknown operator 'flipp'" },
	{ "pipeline p = synthetic(8) | flip(q = 1) | batch(1)", 1, 1, 34, "unknown parameter 'q'" },
	{ "pipeline p = synthetic(8) | flip(p = \"x\") | batch(1)", 1, 1, 38, "expects a number" },
	{ "pipeline p = synthetic(8) | flip(p = 2) | batch(1)", 1, 1, 38, "between 0 and 1" },
	{ "pipeline p = synthetic(8) | batch", 1, 1, 29, "needs parameter 'n'" },
	{ "pipeline p = synthetic(8) | batch(1, 2)", 1, 1, 38, "too many arguments" },
	{ "pipeline p = synthetic(8, channels = 1) | normalize([1,2,3],[1,2,3]) | batch(1)", 1, 1, 53,
	  "3 mean and std values, but the image has 1 channel" },
	{ "pipeline p = synthetic(8) | normalize([1,2,3],[1,2]) | batch(1)", 1, 1, 47,
	  "3 mean values and 2 std values, but the image has 3 channels" },
	{ "pipeline p = synthetic(8) | normalize([1,2],[1,2,3]) | batch(1)", 1, 1, 39,
	  "2 mean values and 3 std values, but the image has 3 channels" },
	{ "pipeline p = folder(\"x\") | normalize([1,2],[1,2,3]) | batch(1)", 3, 1, 28,
	  "needs decoded pixels" },
	{ "pipeline p = folder(\"x\") | decode | batch(1)", 1, 1, 37, "fixed image size" },
	{ "pipeline p = decode | center_crop(2) | batch(1)", 1, 1, 14, "has no source" },
	{ "pipeline p = synthetic(8) | folder(\"x\")", 1, 1, 29, "must be the first stage" },
	{ "pipeline p = synthetic(8) | decode", 1, 1, 29, "already decoded" },
	{ "pipeline p = folder(\"x\") | flip | decode", 1, 1, 28, "needs decoded pixels" },
	{ "pipeline p = synthetic(8) | batch(1) | flip", 1, 1, 29, "must be the last stage" },
	{ "pipeline p = synthetic(s) | batch(1)", 1, 1, 24, "unknown name 's'" },
	{ "pipeline p = synthetic(8)\npipeline p = synthetic(8)", 1, 2, 10, "duplicate pipeline name" },
	{ "let a = 1\nlet a = 2\npipeline p = synthetic(8)", 1, 2, 5, "duplicate let name" },
	{ "pipeline p = synthetic(8)\nserve q { }", 1, 2, 7, "undefined pipeline 'q'" },
	{ "pipeline p = synthetic(8)\nserve p { sockets = \"x\" }", 1, 2, 11, "unknown serve setting" },
	{ "pipeline p = folder(\"x\") | decode\nserve p { }", 1, 2, 7, "no fixed size" },
	{ "pipeline p = synthetic(8) | shuffle | batch(1)", 0, 0, 0, NULL },
	/* shard takes each node's share of the epoch's order: shuffle first */
	{ "pipeline p = synthetic(8) | shard | shuffle | batch(1)", 1, 1, 37,
	  "'shuffle' after 'shard' would shuffle a fixed share" },
	{ "pipeline p = synthetic(8) | shard(1) | batch(1)", 1, 1, 29,
	  "shard needs both index and count" },
	{ "pipeline p = synthetic(8) | to(float32) | flip | batch(1)", 1, 1, 43, "works on uint8" },
	{ "pipeline p = synthetic(8, channels = 1) | to(float32) | normalize(0.5, 0.5) | batch(1)", 1, 1, 57,
	  "must come before a conversion" },
	{ "pipeline p = synthetic(8) | random_resized_crop(4, scale = 0.9..0.1) | batch(1)", 1, 1, 60,
	  "empty range" },
	{ "pipeline p = synthetic(8) | center_crop(16) | batch(1)", 1, 1, 41, "larger than the 8x8" },
	{ "pipeline p = synthetic(8)\nserve p { ring = 4 GiB }", 1, 2, 18, "expects a count" },
	{ "pipeline p = synthetic(8)\nserve p { threads = many }", 1, 2, 21, "expects auto or an integer" },
	{ "let a = b\nlet b = a\npipeline p = synthetic(a)", 1, 3, 24,
	  "let 'a' refers to itself: a -> b -> a" },
	/* a cycle inside a list, and in a plugin's parameter */
	{ "let a = b\nlet b = a\npipeline p = synthetic(8) | normalize([1, a, 1], 1)", 1, 3, 43,
	  "let 'a' refers to itself: a -> b -> a" },
	/* image sizes are 1 to 65535, and an invalid one does not cascade */
	{ "pipeline p = synthetic(8) | center_crop(-1) | batch(1)", 1, 1, 41,
	  "parameter 'size' must be between 1 and 65535, got -1" },
	{ "pipeline p = synthetic(8) | resize([4, 0]) | batch(1)", 1, 1, 40, "got 0" },
	{ "pipeline p = synthetic(8) | resize(0) | center_crop(4) | batch(1)", 1, 1, 36, "got 0" },
	{ "pipeline p = folder(\"x\") | decode | random_crop(0) | batch(1)", 1, 1, 49, "got 0" },
	{ "pipeline p = synthetic(8) | tile(0) | batch(1)", 1, 1, 34, "got 0" },
	{ "pipeline p = synthetic(8) | center_crop(99999999999999999999) | batch(1)", 1, 1, 41,
	  "must be between 1 and 65535, got 99999999999999999999" },
	{ "pipeline p = synthetic([60000, 2]) | resize(60000) | batch(1)", 1, 1, 45,
	  "longer side 1800000000, above 65535" },
	/* a source without its path: an error, not "out of memory" (the
	 * test asserts TS_E_CHECK) */
	{ "pipeline p = folder() | decode | center_crop(4) | batch(1)", 1, 1, 14, "needs parameter 'path'" },
	{ "pipeline p = list(3) | decode | center_crop(4) | batch(1)", 1, 1, 19, "expects a string" },
	{ "pipeline p = tar() | decode | center_crop(4) | batch(1)", 1, 1, 14, "needs parameter 'pattern'" },
	/* serve settings refused at the value */
	{ "pipeline p = synthetic(8) | batch(1)\nserve p { socket = \"\" }", 1, 2, 20,
	  "setting 'socket' is empty" },
	{ "pipeline p = synthetic(8) | batch(1)\nserve p { socket = \"/tmp/"
	  "0123456789012345678901234567890123456789012345678901234567890123456789"
	  "0123456789012345678901234567890123456789\" }", 1, 2, 20,
	  "is 115 bytes long; a Unix socket path holds at most 107" },
	{ "pipeline p = synthetic(8) | batch(1)\nserve p { socket = \"/tmp/"
	  "0123456789012345678901234567890123456789012345678901234567890123456789"
	  "01234567890123456789012345678901\" }", 0, 0, 0, NULL }, /* 107 */
	{ "pipeline p23456789012345678901234567890123456789012345678901234567890123456789"
	  "0123456789012345678901234567890 = synthetic(8) | batch(1)\n"
	  "serve p23456789012345678901234567890123456789012345678901234567890123456789"
	  "0123456789012345678901234567890 { }", 1, 2, 7, "the default socket path" },
	{ "pipeline p = synthetic(8) | batch(1)\nserve p { group = \"\" }", 1, 2, 19,
	  "setting 'group' is empty" },
	{ "pipeline p = synthetic(8) | batch(1)\nserve p { memory = -5 GiB }", 1, 2, 20,
	  "setting 'memory' must not be negative, got -5 GiB" },
	{ "pipeline p = synthetic(8) | batch(1)\nserve p { job_timeout = 0.1 }", 1, 2, 25,
	  "setting 'job_timeout' is 0.1 s, finer than the producer checks waiting jobs" },
	/* every error, not only the first */
	{ "pipeline p = synthetic(8) | flipp | resize(x) | batch(0)", 3, 1, 29, "unknown operator" },
};

START_TEST(test_errors)
{
	struct ts_diags d;
	int rc;
	struct ts_plan *p = compile(errors[_i].src, NULL, &d, &rc);
	char *text = ts_diags_render(&d);

	ck_assert_msg(d.n_errors == errors[_i].n_errors, "case %d: %zu errors, expected %zu:\n%s",
		      _i, d.n_errors, errors[_i].n_errors, text ? text : "");
	if (errors[_i].n_errors) {
		ck_assert_int_eq(rc, TS_E_CHECK);
		ck_assert_ptr_null(p);
		ck_assert_msg(d.items[0].loc.first_line == errors[_i].line &&
			      d.items[0].loc.first_column == errors[_i].col,
			      "case %d: at %d:%d, expected %d:%d:\n%s", _i,
			      d.items[0].loc.first_line, d.items[0].loc.first_column,
			      errors[_i].line, errors[_i].col, text);
		ck_assert_msg(strstr(d.items[0].msg, errors[_i].msg), "case %d: '%s' lacks '%s'",
			      _i, d.items[0].msg, errors[_i].msg);
	} else {
		ck_assert_int_eq(rc, 0);
		ts_plan_destroy(p);
	}
	free(text);
	ts_diags_fini(&d);
}
END_TEST

/* Let chains of any length resolve (17 was reported as a cycle once; the
 * depth limit is gone), and a cycle is named with its members, from the
 * let used when it is one of them, else from where the chain enters it. */
static const struct {
	int n_chain;        /* lets a0 = a1, ..., a(n-1) = an */
	int cycle_to;       /* -1: an = 8; else an = a(cycle_to) */
	const char *msg;    /* NULL: it checks */
} chains[] = {
	{ 17, -1, NULL },
	{ 20000, -1, NULL },
	{ 2, 0, "let 'a0' refers to itself: a0 -> a1 -> a2 -> a0" },
	{ 0, 0, "let 'a0' refers to itself: a0 -> a0" },
	{ 5, 3, "let 'a0' leads to a cycle of lets: a3 -> a4 -> a5 -> a3" },
	{ 30, 0, "let 'a0' refers to itself: a0 -> a1 -> a2 -> a3 -> a4 -> a5 -> a6 -> a7 -> ..." },
	{ 20000, 19990, "let 'a0' leads to a cycle of lets: a19990 -> a19991 -> " },
};

START_TEST(test_let_chains)
{
	int n = chains[_i].n_chain;
	size_t cap = (size_t)n * 32 + 256, len = 0;
	char *src = malloc(cap);
	struct ts_diags d;
	int rc;

	ck_assert_ptr_nonnull(src);
	/* the lets after their use, in reverse order: order does not matter */
	len += (size_t)snprintf(src + len, cap - len,
				"pipeline p = synthetic(a0) | to(uint8, nhwc) | batch(2)\n");
	if (chains[_i].cycle_to < 0)
		len += (size_t)snprintf(src + len, cap - len, "let a%d = 8\n", n);
	else
		len += (size_t)snprintf(src + len, cap - len, "let a%d = a%d\n", n,
					chains[_i].cycle_to);
	for (int i = n - 1; i >= 0; i--)
		len += (size_t)snprintf(src + len, cap - len, "let a%d = a%d\n", i, i + 1);
	struct ts_plan *p = compile(src, NULL, &d, &rc);
	if (!chains[_i].msg) {
		char *text = ts_diags_render(&d);
		ck_assert_msg(rc == 0, "chain of %d: %s", n, text ? text : "");
		free(text);
		ck_assert_int_eq(p->height, 8);
		ts_plan_destroy(p);
	} else {
		ck_assert_int_eq(rc, TS_E_CHECK);
		ck_assert_uint_eq(d.n_errors, 1);
		ck_assert_int_eq(d.items[0].loc.first_line, 1);
		ck_assert_int_eq(d.items[0].loc.first_column, 24);
		ck_assert_msg(strncmp(d.items[0].msg, chains[_i].msg, strlen(chains[_i].msg)) == 0,
			      "'%s' does not start with '%s'", d.items[0].msg, chains[_i].msg);
	}
	ts_diags_fini(&d);
	free(src);
}
END_TEST

/* ---- the checker on a hand-built AST --------------------------------- */

static struct ts_loc L(int line, int col, int len)
{
	return (struct ts_loc){ line, col, line, col + len - 1 };
}

START_TEST(test_ast_direct)
{
	struct ts_ast_program prog = {0};
	struct ts_diags d;
	struct ts_plan *plan = NULL;
	struct ts_ast_call *calls;
	int rc;

	calls = ts_ast_call(L(1, 14, 13), "synthetic", L(1, 14, 9),
			    ts_ast_arg(L(1, 24, 2), NULL, L(0, 0, 0),
				       ts_ast_num(L(1, 24, 2), 16, true, "16")));
	calls = ts_ast_call_append(calls,
		ts_ast_call(L(1, 30, 4), "flip", L(1, 30, 4), NULL));
	calls = ts_ast_call_append(calls,
		ts_ast_call(L(1, 37, 8), "batch", L(1, 37, 5),
			    ts_ast_arg(L(1, 43, 1), NULL, L(0, 0, 0),
				       ts_ast_num(L(1, 43, 1), 4, true, "4"))));
	ts_ast_program_add(&prog, ts_ast_pipeline(L(1, 1, 44), "p", L(1, 10, 1), calls));
	ts_diags_init(&d, "ast", "", 0);
	rc = ts_dsl_check(&prog, NULL, "ast", "/base", &d, &plan);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(plan->batch, 4);
	ck_assert_int_eq(plan->height, 16);
	ck_assert_str_eq(plan->source.base_dir, "/base");
	ck_assert_int_eq(plan->ops[0].kind, TS_OP_OUTPUT);
	ck_assert_int_eq(plan->ops[0].output.parts[0].kind, TS_OP_FLIP);
	ck_assert(plan->ops[0].output.parts[0].flip.horizontal);
	ck_assert_double_eq(plan->ops[0].output.parts[0].flip.p, 0.5);
	ts_plan_destroy(plan);
	ts_diags_fini(&d);
	ts_ast_program_destroy(&prog);
}
END_TEST

/* ---- registry and formatting ---------------------------------------- */

START_TEST(test_registry)
{
	size_t n = ts_registry_count(), ns;
	const struct ts_param *serve = ts_registry_serve(&ns);

	ck_assert_str_eq(serve[0].name, "socket");
	/* The expectations come from the one operator list (plan/ops.def):
	 * every kind but the output stage has exactly one transform row,
	 * named as the list names it, every source kind one source row. */
	static const enum ts_op_kind kinds[] = {
#define TS_OP(k, name) TS_OP_##k,
#include "ops.def"
#undef TS_OP
	};
	static const enum ts_source_kind sources[] = {
#define TS_SOURCE_KIND(k, name, encoded) TS_SRC_##k,
#include "ops.def"
#undef TS_SOURCE_KIND
	};
	size_t n_kinds = sizeof(kinds) / sizeof(kinds[0]);
	size_t n_sources = sizeof(sources) / sizeof(sources[0]);
	/* + shard, shuffle, device, batch: the rows without a kind */
	ck_assert_uint_eq(n, n_kinds - 1 + n_sources + 4);
	for (size_t i = 0; i < n_kinds; i++) {
		ck_assert_int_eq(kinds[i], (int)i);
		const struct ts_opdef *d = ts_registry_of_kind(kinds[i]);
		if (kinds[i] == TS_OP_OUTPUT) {
			ck_assert_ptr_null(d);
			continue;
		}
		ck_assert_msg(d != NULL, "%s has no registry row", ts_op_kind_name(kinds[i]));
		ck_assert_ptr_eq(ts_registry_find(ts_op_kind_name(kinds[i])), d);
		/* it runs somewhere: a kernel row (runtime/kernels), or a stage
		 * of the engine's own, asked by property: decode, the fused
		 * output stage, tile/filter/plugin, views */
		ck_assert_msg(ts_kernel_find(kinds[i]) != NULL ||
				      (d->flags & (TS_OPF_ENCODED | TS_OPF_FUSE_OUTPUT |
						   TS_OPF_EXPANDS | TS_OPF_VIEWS)),
			      "%s has neither a kernel row nor an engine stage",
			      d->name);
	}
	for (size_t i = 0; i < n_sources; i++) {
		const struct ts_opdef *d = ts_registry_of_source(sources[i]);
		ck_assert_ptr_nonnull(d);
		ck_assert_str_eq(d->name, ts_source_kind_name(sources[i]));
		ck_assert_int_eq((d->flags & TS_OPF_ENCODED) != 0,
				 ts_source_kind_encoded(sources[i]));
	}
	for (size_t i = 0; i < n; i++) {
		const struct ts_opdef *d = ts_registry_at(i);
		ck_assert_ptr_eq(ts_registry_find(d->name), d);
		/* a transform's row carries its shape rule, builder and
		 * description; a source's or modifier's how it applies */
		ck_assert_int_eq(d->kind == TS_REG_TRANSFORM, d->shape != NULL);
		ck_assert_int_eq(d->kind == TS_REG_TRANSFORM, d->build != NULL);
		ck_assert_int_eq(d->kind == TS_REG_TRANSFORM, d->describe != NULL);
		ck_assert_int_eq(d->kind == TS_REG_SOURCE || d->kind == TS_REG_MODIFIER,
				 d->apply != NULL);
		ck_assert_int_eq((d->flags & TS_OPF_EXPANDS) != 0, d->fanout != NULL);
		if (d->kind == TS_REG_TRANSFORM) {
			ck_assert_str_eq(ts_op_kind_name(d->op_kind), d->name);
			ck_assert_ptr_eq(ts_registry_of_kind(d->op_kind), d);
		}
		for (size_t j = 0; j < d->n_params; j++)
			if (d->params[j].type == TS_PT_WORD)
				ck_assert_ptr_nonnull(d->params[j].words);
	}
	ck_assert_ptr_nonnull(ts_registry_find("shard"));
	ck_assert_ptr_nonnull(ts_registry_find("shuffle"));
	ck_assert_ptr_nonnull(ts_registry_find("device"));
	ck_assert_ptr_nonnull(ts_registry_find("batch"));
	ck_assert_ptr_null(ts_registry_at(n));
	ck_assert_ptr_null(ts_registry_of_kind(TS_OP_OUTPUT));
	ck_assert_str_eq(ts_op_kind_name(TS_OP_OUTPUT), "output");
	ck_assert_ptr_null(ts_registry_find("flipp"));
	ck_assert_uint_eq(ns, 15);
	ck_assert_ptr_nonnull(ts_registry_param(NULL, "metrics"));
	ck_assert_ptr_nonnull(ts_registry_param(NULL, "cache"));
	ck_assert_ptr_nonnull(ts_registry_param(NULL, "job_timeout"));
	ck_assert_ptr_nonnull(ts_registry_param(NULL, "queue_depth"));
	ck_assert_ptr_nonnull(ts_registry_param(NULL, "stall_timeout"));
	ck_assert_ptr_nonnull(ts_registry_param(NULL, "job_timeout"));
	ck_assert_ptr_nonnull(ts_registry_param(NULL, "consumers"));
	ck_assert_ptr_nonnull(ts_registry_param(NULL, "max_file_size"));
	ck_assert_ptr_nonnull(ts_registry_param(ts_registry_find("resize"), "antialias"));
	ck_assert_uint_eq(ts_dtype_size(TS_DTYPE_F16), 2);
	ck_assert_str_eq(ts_dtype_name(TS_DTYPE_U16), "uint16");
	ck_assert_str_eq(ts_layout_name(TS_LAYOUT_NCHW), "nchw");
}
END_TEST

static const struct {
	uint64_t bytes;
	const char *text;
} sizes[] = {
	{ 512, "512 B" }, { 1024, "1 KiB" }, { 602112, "588 KiB" },
	{ 64ull << 20, "64 MiB" }, { 1395864371ull, "1.3 GiB" }, { 1536, "1.5 KiB" },
};

START_TEST(test_format_size)
{
	char buf[32];
	ts_plan_format_size(sizes[_i].bytes, buf, sizeof(buf));
	ck_assert_str_eq(buf, sizes[_i].text);
}
END_TEST

START_TEST(test_format)
{
	struct ts_plan *p = compile_ok(
		"pipeline p = folder(\"x\") | decode | random_resized_crop(224)"
		" | to(float32, nchw) | batch(256)\nserve p { threads = 4 }");
	char *text = ts_plan_format(p, false);
	char *dot = ts_plan_format(p, true);

	ck_assert_ptr_nonnull(strstr(text, "3x224x224 float32 nchw"));
	ck_assert_ptr_nonnull(strstr(text, "+ random_resized_crop(224"));
	ck_assert_ptr_nonnull(strstr(text, "602112 bytes"));
	ck_assert_ptr_nonnull(strstr(text, "4 threads x 16 MiB"));
	ck_assert(strncmp(dot, "digraph \"p\" {", 13) == 0);
	ck_assert_ptr_nonnull(strstr(dot, "source -> op0 -> op1 -> batch -> ring;"));
	free(text);
	free(dot);
	ts_plan_destroy(p);
}
END_TEST

static Suite *check_suite(void)
{
	Suite *s = suite_create("check");
	TCase *tc;

	tc = tcase_create("shape");
	tcase_add_loop_test(tc, test_shape, 0, sizeof(shapes) / sizeof(shapes[0]));
	tcase_add_test(tc, test_shape_variable);
	suite_add_tcase(s, tc);

	tc = tcase_create("fusion");
	tcase_add_test(tc, test_fuse_decode_crop);
	tcase_add_test(tc, test_fuse_val);
	tcase_add_test(tc, test_no_fusion);
	tcase_add_test(tc, test_fuse_flip_before_resize);
	suite_add_tcase(s, tc);

	tc = tcase_create("plan");
	tcase_add_test(tc, test_source);
	tcase_add_test(tc, test_serve);
	tcase_add_test(tc, test_estimate_cache);
	tcase_add_test(tc, test_estimate);
	tcase_add_test(tc, test_budget);
	tcase_add_loop_test(tc, test_budget_hint, 0, sizeof(hints) / sizeof(hints[0]));
	tcase_add_test(tc, test_budget_hint_limits);
	tcase_add_test(tc, test_served_list);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_loop_test(tc, test_errors, 0, sizeof(errors) / sizeof(errors[0]));
	tcase_add_loop_test(tc, test_let_chains, 0, sizeof(chains) / sizeof(chains[0]));
	tcase_add_test(tc, test_ast_direct);
	suite_add_tcase(s, tc);

	tc = tcase_create("registry");
	tcase_add_test(tc, test_registry);
	tcase_add_loop_test(tc, test_format_size, 0, sizeof(sizes) / sizeof(sizes[0]));
	tcase_add_test(tc, test_format);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(check_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
