/*
 * plan.h - the checked, lowered form of one pipeline: what the runtime
 * executes. The runtime takes a struct ts_plan and never sees the AST.
 *
 * A plan is a source (with shard and shuffle folded in), a list of
 * per-sample operators in execution order after fusion, the sample shape
 * the last operator writes, the serve settings and the memory estimate.
 *
 * Per-sample value semantics, shared by checker and runtime:
 *   - decode yields uint8 (or uint16 with depth = 16) pixels, HWC, 1 or 3
 *     channels; synthetic sources yield the same without a decode stage.
 *   - normalize maps x -> (x / maxval - mean[c]) / std[c] as float32, where
 *     maxval is 255 for uint8 and 65535 for uint16 (torchvision's ToTensor
 *     followed by Normalize).
 *   - to(float32|float16) without a normalize before it maps x -> x / maxval;
 *     to(uint8) of a uint16 image maps x -> round(x / 257); to(uint8) of a
 *     float image clamps round(x * 255) to 0..255.
 *   - Random choices of sample (epoch, index) come from the counter-based
 *     RNG keyed by (seed, epoch, key, op position), key its position in
 *     the epoch's order before shard() takes the node's share (the
 *     engine's ts_engine_key; the index itself without a shard).
 */
#ifndef TS_PLAN_H
#define TS_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"
#include "types.h"

/* enum ts_dtype and enum ts_layout are public (types.h): they cross
 * processes (the ring header's fields) and every public header uses them. */
enum ts_source_kind {
#define TS_SOURCE_KIND(k, name, encoded) TS_SRC_##k,
#include "ops.def"
#undef TS_SOURCE_KIND
};
/* The sources' names (as ts_op_names) and TS_SRCF_<KIND>: TS_OPF_ENCODED
 * for a source that yields encoded files, for its registry row. */
struct ts_source_name_table {
#define TS_SOURCE_KIND(k, name, encoded) char k[sizeof(name)];
#include "ops.def"
#undef TS_SOURCE_KIND
};
extern const struct ts_source_name_table ts_source_names;
enum {
#define TS_SOURCE_KIND(k, name, encoded) TS_SRCF_##k = (encoded) ? 1 << 0 : 0,
#include "ops.def"
#undef TS_SOURCE_KIND
};
enum ts_on_error { TS_ON_ERROR_FAIL, TS_ON_ERROR_SKIP };
enum ts_interp { TS_INTERP_BILINEAR, TS_INTERP_AREA, TS_INTERP_NEAREST,
		 TS_INTERP_BICUBIC, TS_INTERP_LANCZOS };
enum ts_color { TS_COLOR_RGB, TS_COLOR_GRAY };
/* pad(padding_mode = ...): numpy's np.pad modes, as torchvision names them */
enum ts_pad_mode { TS_PAD_CONSTANT, TS_PAD_EDGE, TS_PAD_REFLECT, TS_PAD_SYMMETRIC };

/* Bytes of one element of a dtype; the lowercase name ("float32"). */
size_t ts_dtype_size(enum ts_dtype t);
const char *ts_dtype_name(enum ts_dtype t);
const char *ts_layout_name(enum ts_layout l);

struct ts_source {
	enum ts_source_kind kind;
	char *path;      /* folder: root dir; list: the list file; tar: the
			    shard pattern with {000..146} unexpanded */
	char **exts;     /* folder: accepted extensions, lowercase, with '.' */
	size_t n_exts;
	/* synthetic: count images of height x width x channels, depth bits,
	 * labels cycling over classes. */
	int64_t count;
	int height, width, channels, depth, classes;
	/* shard(index, count, drop_last): count == 0 means no sharding; index
	 * == -1 and count == -1 mean "the node's, from GROUP_RANK/
	 * GROUP_WORLD_SIZE or SLURM_NODEID/SLURM_NNODES at open time"
	 * (runtime/share.h). The share is taken each epoch after shuffle. */
	int shard_index, shard_count;
	bool shard_drop;
	/* Set by whoever resolved -1/-1 for display (tsrun graph): where
	 * the node came from, a static string; NULL otherwise. */
	const char *shard_env;
	bool shuffle;
	uint64_t seed;
	/* Directory of the pipeline file: relative paths resolve against it. */
	char *base_dir;
	/* Where path is written in the pipeline file (folder, list, tar):
	 * what `tsrun check --sources` points at when it is not there. */
	struct ts_loc loc;
};

/* The operator kinds, from the one list (ops.def): TS_OP_DECODE, ... */
enum ts_op_kind {
#define TS_OP(k, name) TS_OP_##k,
#include "ops.def"
#undef TS_OP
};

/* The kinds' names as one object, a member per kind, so that a registry
 * row can name its operator by kind in a constant initializer
 * (.name = ts_op_names.RESIZE, dsl/registry.h's TS_TRANSFORM). */
struct ts_op_name_table {
#define TS_OP(k, name) char k[sizeof(name)];
#include "ops.def"
#undef TS_OP
};
extern const struct ts_op_name_table ts_op_names;

/* What the checker and the runtime ask of an op instead of naming its
 * kind: its registry row's flags (dsl/registry.h), copied into the op
 * (struct ts_op.flags) when the checker builds it. */
enum ts_op_flags {
	TS_OPF_ENCODED = 1 << 0,     /* takes encoded bytes (decode); of a
					source: yields them */
	TS_OPF_PIXELS = 1 << 1,      /* works on uint8/uint16 nhwc pixels */
	TS_OPF_FUSE_DECODE = 1 << 2, /* right after decode: an ROI decode */
	TS_OPF_FUSE_OUTPUT = 1 << 3, /* may join the trailing output stage */
	TS_OPF_GEOMETRY = 1 << 4,    /* ... as geometry, run before the rest */
	TS_OPF_EXPANDS = 1 << 5,     /* makes 0, 1 or several samples per one */
	TS_OPF_OWN_ARGS = 1 << 6,    /* binds its arguments itself (plugin) */
	TS_OPF_INTEGER = 1 << 7,     /* takes integer pixels, before a to(float) */
	TS_OPF_UINT8 = 1 << 8,       /* with PIXELS: uint8 only (the shape rule
					refuses uint16) */
	TS_OPF_BANDS = 1 << 9,       /* right after an unfused decode, of a
					fixed size: the frame is decoded in
					bands of its height (tile) */
	TS_OPF_ALTERNATIVES = 1 << 10, /* its branches are alternatives, one
					  of them applied (random_choice);
					  else one chain (random_apply) */
	TS_OPF_VIEWS = 1 << 11,      /* views(): binds its groups from the
					call itself (build), runs nowhere
					but last, makes the sample's views */
	TS_OPF_BRANCHES = 1 << 12,   /* owns branches of ops (random_apply,
					random_choice: the policy member's;
					views' groups are TS_OPF_VIEWS) */
};

const char *ts_op_kind_name(enum ts_op_kind k); /* "random_resized_crop" */
/* A source kind's name ("folder"), and whether it yields encoded files to
 * read and decode (TS_OPF_ENCODED of its registry row; synthetic() yields
 * decoded pixels, without files or reads). */
const char *ts_source_kind_name(enum ts_source_kind k);
bool ts_source_kind_encoded(enum ts_source_kind k);

/* The to() that writes last's dtype in layout, with no RNG stream (index
 * -1): lowering ends an output stage with one when the pipeline has no
 * to() of its own, as a stage's prefix plan does. last NULL: a zero to(). */
struct ts_op;
void ts_plan_op_to(struct ts_op *to, const struct ts_op *last, enum ts_layout layout);

/* Write bytes as "602 KiB", "1.3 GiB", "64 MiB", "512 B" into buf. */
void ts_plan_format_size(uint64_t bytes, char *buf, size_t n);

struct ts_op;
/* Whether op is the fused output stage (lowering makes it; always the
 * plan's last op), and whether it is one that makes 0, 1 or several
 * samples of one (its registry row's TS_OPF_EXPANDS: a tile, filter or
 * plugin), so that the stages after it no longer see one image per
 * sample. What the runtime asks instead of naming kinds. */
bool ts_op_is_output(const struct ts_op *op);
bool ts_op_expands(const struct ts_op *op);

/* What generic code (freeing, the memory estimate, graph, preview) asks
 * of an op whose parameters are another family's (struct ts_op's union):
 * its branches (random_apply and random_choice, TS_OPF_BRANCHES) or
 * views' groups (TS_OPF_VIEWS), *n their count; the op fused into a
 * decode (TS_OPF_ENCODED); the output stage's parts. NULL and 0 for an
 * op without them. */
struct ts_op_branch *ts_op_branches(const struct ts_op *op, size_t *n);
struct ts_op *ts_op_fused(const struct ts_op *op);
struct ts_op *ts_op_parts(const struct ts_op *op, size_t *n);

/* The output size of an op with a size parameter (resize, center_crop,
 * random_crop, random_resized_crop, tile: their members begin with
 * size_h, size_w, a common initial sequence), set by the checker when
 * the size given was invalid. */
void ts_op_set_size(struct ts_op *op, int h, int w);

/* A normalize op's mean and std (what preview shows the values by), NULL
 * for any other op. */
const struct ts_op_norm *ts_op_norm(const struct ts_op *op);

/* plugin("path.so", key = value, ...): what the runtime needs to run it.
 * path is as written in the pipeline (a relative one resolves against
 * source.base_dir at engine creation); every named parameter but the
 * reserved timeout_ms and memory is passed to the plugin as text, in the
 * order written. Allocated as one block together with its strings. */
struct ts_op_plugin {
	char *path;
	int timeout_ms;           /* per sample: 1..600000, default 1000 */
	uint64_t memory;          /* the plugin process's address space limit
				     (RLIMIT_AS, beyond its start); 0: none */
	int n_params;
	char **names;             /* n_params each */
	char **values;
};

struct ts_op;

/* the policy family: one branch of random_apply or random_choice, its ops
 * in order (checked as a pipeline's, never fused: each runs on the image
 * in place through the runtime's kernels), owned. */
struct ts_op_branch {
	struct ts_op *ops;
	size_t n_ops;
	double weight;            /* random_choice: relative weight, > 0 */
	/* views(): this group's view count (1..TS_PLAN_MAX_VIEWS); its ops
	 * are lowered as a pipeline's tail (ending in an OUTPUT), numbered
	 * 1, 2, ... in the group as after a source */
	int views;
};

/* views(...): one view of a sample, as its slot holds it. */
#define TS_PLAN_MAX_VIEWS 32
struct ts_plan_view {
	int height, width, channels;
	enum ts_dtype dtype;
	enum ts_layout layout;
	int group;                /* the views() group it comes from, from 0 */
	size_t offset, bytes;     /* in the sample */
};
/* The seed view v's ops draw under (their streams as
 * ts_rng_init(seed', epoch, index, op->index)): a splitmix64 step of
 * seed + v + 1, so each view draws its own choices. */
uint64_t ts_plan_view_seed(uint64_t seed, int v);

/* auto_augment(policy): torchvision's AutoAugmentPolicy. */
enum ts_aa_policy { TS_AA_IMAGENET, TS_AA_CIFAR10, TS_AA_SVHN };

/* One operator's parameters, a struct per family: struct ts_op holds
 * the generic fields and one of these in its union, the member of its
 * kind's family (the comment on each says which kinds). A kernel reads
 * its own family's member and nothing else; a field a family does not
 * have cannot be read by mistake. */

/* decode */
struct ts_op_decode {
	enum ts_color color;
	int depth;                /* 8 or 16 */
	struct ts_op *fused;      /* a RESIZE / CENTER_CROP / RANDOM_CROP /
				     RANDOM_RESIZED_CROP folded into the
				     decode as an ROI + DCT-scaled decode;
				     owned; NULL when none (ts_op_fused) */
};

/* resize: size_w == 0 means "shorter side to size_h" (torchvision
 * Resize(int)); otherwise exactly size_h x size_w. */
struct ts_op_resize {
	int size_h, size_w;
	enum ts_interp interp;
	bool antialias;
	int max_size;             /* resize(N, max_size = M): the longer side's
				     bound (torchvision's max_size); 0: none */
};

/* center_crop, random_crop, random_resized_crop: output size_h x size_w */
struct ts_op_crop {
	int size_h, size_w;
	int padding;              /* random_crop */
	/* random_resized_crop */
	double scale_lo, scale_hi, ratio_lo, ratio_hi;
	enum ts_interp interp;
	bool antialias;
};

/* flip */
struct ts_op_flip {
	bool horizontal;          /* true horizontal, false vertical */
	double p;                 /* probability */
};

/* color_jitter: the factors */
struct ts_op_jitter {
	double brightness, contrast, saturation, hue;
};

/* grayscale */
struct ts_op_gray {
	int channels;             /* 1 or 3 output channels */
	double p;                 /* probability */
};

/* normalize */
struct ts_op_norm {
	int n_mean;               /* 1..4 */
	float mean[4], std[4];
};

/* to */
struct ts_op_to {
	enum ts_dtype dtype;
	enum ts_layout layout;
};

/* tile: size_h x size_w tiles every stride_h, stride_w */
struct ts_op_tile {
	int size_h, size_w;
	int stride_h, stride_w;
};

/* filter: drop a sample when more than max_fraction of its pixels exceed
 * threshold (a fraction of full scale) */
struct ts_op_filter {
	double threshold, max_fraction;
};

/* the color family (dsl/ops_color.c, runtime/kernels/color.c): invert,
 * posterize, solarize, autocontrast, equalize, adjust_* (adjust_sharpness
 * too, whose kernel is in filter.c) */
struct ts_op_color {
	double p;                 /* invert, posterize, solarize,
				     autocontrast, equalize: probability */
	double factor;            /* adjust_*: the fixed factor (hue: -0.5..0.5) */
	int bits;                 /* posterize: bits kept, 1..8 */
	double level;             /* solarize: the threshold, in levels */
	double gamma, gain;       /* adjust_gamma */
};

/* gaussian_blur */
struct ts_op_blur {
	int kernel_w, kernel_h;   /* odd kernel sides (x, y) */
	double sigma_lo, sigma_hi; /* sigma, or drawn U(lo, hi) per sample
				      when lo < hi */
};

/* the geometry family (dsl/ops_geometry.c, runtime/kernels/geometry.c):
 * rotate, affine, pad, erase, perspective, random_rotation, random_affine,
 * random_perspective, as torchvision.transforms names the parameters. */
struct ts_op_geometry {
	enum ts_interp interp;    /* nearest or bilinear */
	double p;                 /* random_perspective: probability */
	double angle;             /* rotate: degrees counter-clockwise;
				     affine: degrees clockwise */
	double translate[2];      /* affine: pixels (x, y) */
	double scale;             /* affine: > 0 */
	double shear[2];          /* affine: degrees (x, y) */
	bool has_center;          /* center given: rotation/shear about it,
				     else about the image's centre */
	double center[2];         /* (x, y), pixels from the top left */
	bool expand;              /* rotate, random_rotation */
	int n_fill;               /* fill (rotate, affine, pad constant,
				     perspective) or value (erase): 1 (every
				     channel) or one per channel */
	double fill[4];
	int pad[4];               /* pad: left, top, right, bottom; < 0 crops */
	enum ts_pad_mode pad_mode;
	int erase_i, erase_j, erase_h, erase_w; /* erase: top, left, size */
	double start[8], end[8];  /* perspective: corners (x, y) top-left,
				     top-right, bottom-right, bottom-left */
	/* random_rotation, random_affine: angle ~ U(degrees) */
	double degrees[2];
	bool has_translate;       /* random_affine: |tx| <= translate[0] * w */
	bool has_scale;           /* random_affine: scale ~ U(scale_range) */
	double scale_range[2];
	int n_shear;              /* random_affine: 0, 2 (x) or 4 (x, y) */
	double shear_range[4];
	double distortion;        /* random_perspective: distortion_scale */
};

/* the policy family (dsl/ops_policy.c, runtime/kernels/policy.c and
 * augmix.c): random_apply, random_choice, random_erasing, rand_augment,
 * trivial_augment_wide, auto_augment, augmix. */
struct ts_op_policy {
	double p;                 /* random_apply, random_erasing */
	/* random_apply: p and one branch; random_choice: n_branches >= 1
	 * (TS_OPF_BRANCHES; ts_op_branches). Branch ops draw from streams
	 * forked off this op's (ts_rng_fork with their index). Freed by
	 * ts_plan_branches_free. */
	struct ts_op_branch *branches;
	size_t n_branches;
	/* rand_augment(num_ops, magnitude, num_magnitude_bins),
	 * trivial_augment_wide(num_magnitude_bins), auto_augment(policy);
	 * all three and augmix with interp (nearest, bilinear or bicubic)
	 * and their fill (n_fill, fill as the geometry ops keep theirs). */
	int num_ops, magnitude, num_bins;
	enum ts_aa_policy aa_policy;
	enum ts_interp interp;
	int n_fill;
	double fill[4];
	/* random_erasing(p, scale, ratio, value): the value 0, one per
	 * channel (n_erase 1 or C), or standard normal draws (erase_random). */
	double scale_lo, scale_hi, ratio_lo, ratio_hi;
	int n_erase;
	float erase_value[4];
	bool erase_random;
	/* augmix(severity, mixture_width, chain_depth, alpha, all_ops,
	 * interpolation, fill) (runtime/kernels/augmix.c): a chain_depth of 0
	 * or below draws each chain's depth (1 to 3); interp nearest or
	 * bilinear, augmix_fill false for torchvision's fill = None. */
	int augmix_severity, augmix_width, augmix_depth;
	double augmix_alpha;
	bool augmix_all_ops, augmix_fill;
};

/* views(): its groups (TS_OPF_VIEWS; ts_op_branches), owned */
struct ts_op_views {
	struct ts_op_branch *branches;
	size_t n_branches;
};

/* TS_OP_OUTPUT: the fused tail ops in order (any of RESIZE, CENTER_CROP,
 * FLIP, NORMALIZE, TO, and the tail ops); owned. The last part is always
 * a TO naming the final dtype and layout (index -1 when the pipeline has
 * no to() of its own). OUTPUT is always the last op. */
struct ts_op_output {
	struct ts_op *parts;
	size_t n_parts;
};

struct ts_op {
	enum ts_op_kind kind;
	struct ts_loc loc;        /* the call in the source */
	int index;                /* position in the pipeline: RNG stream id */
	unsigned flags;           /* enum ts_op_flags of its registry row (0
				     for the output stage lowering makes) */
	unsigned scratch_images;  /* its row's: image-sized buffers its kernel
				     holds beyond the image and tmp (augmix) */

	/* plugin: the shared object and its parameters; owned (one block:
	 * free() of the pointer frees it all). NULL for other kinds. */
	struct ts_op_plugin *plugin;

	/* The parameters: the member of the kind's family (above). */
	union {
		struct ts_op_decode decode;
		struct ts_op_resize resize;
		struct ts_op_crop crop;
		struct ts_op_flip flip;
		struct ts_op_jitter jitter;
		struct ts_op_gray gray;
		struct ts_op_norm norm;
		struct ts_op_to to;
		struct ts_op_tile tile;
		struct ts_op_filter filter;
		struct ts_op_color color;
		struct ts_op_blur blur;
		struct ts_op_geometry geo;
		struct ts_op_policy policy;
		struct ts_op_views views;
		struct ts_op_output output;
	};

	/* Inferred shape after this op: height/width 0 when variable. */
	int out_h, out_w, out_c;
	enum ts_dtype out_dtype;
	enum ts_layout out_layout;
};

/*
 * device(cuda): an optional GPU finishing stage after the last CPU stage.
 * The CPU part of the plan (ops, dtype, layout, sample_bytes above) still
 * writes uint8 NHWC samples into the host ring; the GPU stage converts a
 * batch of them to dtype/layout and, when normalize is set, maps
 * x -> (x / 255 - mean[c]) / std[c], in one kernel into a device ring.
 * cuda is false (and the rest zero) when the pipeline has no device().
 */
struct ts_plan_device {
	bool cuda;                /* the pipeline ends in device(cuda) */
	struct ts_loc loc;        /* the device(...) call */
	enum ts_dtype dtype;      /* TS_DTYPE_F32 or TS_DTYPE_F16 */
	enum ts_layout layout;    /* TS_LAYOUT_NCHW */
	bool normalize;           /* mean/std given */
	int n_mean;               /* = channels when normalize */
	float mean[4], std[4];
	size_t sample_bytes;      /* one finished sample on the device */
};

struct ts_plan {
	char *name;               /* the pipeline's name */
	char *file;               /* the pipeline file, or "<string>" */
	struct ts_source source;
	struct ts_op *ops;        /* in execution order, after fusion */
	size_t n_ops;

	/* One sample as written into the ring. */
	int height, width, channels;
	enum ts_dtype dtype;
	enum ts_layout layout;
	size_t sample_bytes;
	bool expands;             /* a tile or filter: samples out != in */
	int max_out_per_in;       /* upper bound of samples per source item;
				     0 when unbounded (tile of a variable-
				     size image) */

	int batch;                /* default batch size, the unit of ring */

	/* Every pipeline the file serves (the serve blocks, in file order,
	 * each name once), comma separated: "train, val"; NULL when none.
	 * The file may serve several; a caller about to serve "the served
	 * pipeline" without being told which (tsrun run without --pipeline)
	 * must refuse when n_served > 1 and list these. */
	int n_served;
	char *served_names;

	/* serve block (defaults when the pipeline is not served) */
	bool served;
	char *socket;
	bool socket_private;      /* the default: in tsrun's private folder
				     ($XDG_RUNTIME_DIR/tsrun or /tmp/tsrun-UID),
				     which tsrun run creates */
	char *group;              /* NULL: socket mode 0600 */
	int epochs;               /* 0 = forever */
	int64_t ring_samples;     /* ring capacity in samples */
	int64_t ring_asked;       /* what `ring` asked for (check_serve.c),
				     before ts_plan_estimate rounds
				     ring_samples to whole pages */
	uint64_t memory_budget;   /* 0 = none */
	/* the decoded cache (serve setting cache; runtime/engine/
	 * engine_cache.c): the bytes asked, 0 = none; cache_auto: what the
	 * budget leaves once the rest is counted (ts_plan_estimate) */
	uint64_t cache_bytes;
	bool cache_auto;
	int threads;              /* 0 = auto (online cores) */
	enum ts_on_error on_error;
	int queue_depth;          /* io_uring reads in flight */
	uint64_t max_file_size;   /* largest file or tar member read, bytes */
	uint64_t max_image_pixels; /* largest image decoded, width x height */
	double stall_timeout_s;   /* a trainer holding the ring this long while
				     others wait is detached; 0: never */
	double job_timeout_s;     /* a job short of ranks this long fails;
				     0: never; < 0: stall_timeout_s */
	int max_consumers;        /* trainers served at once */
	char *metrics;            /* serve { metrics = }: the Prometheus text
				     file kept current; NULL: none */

	/* Memory estimate, bytes. */
	uint64_t mem_ring;        /* samples + labels + positions */
	uint64_t mem_scratch;     /* all workers' decode/augment buffers */
	uint64_t mem_io;          /* reader buffers */
	uint64_t mem_process;     /* the process itself: code, libraries,
				     stacks, allocator */
	uint64_t mem_cache;       /* the decoded cache's arena, whole (0:
				     none, or the source has nothing to
				     decode) */
	uint64_t mem_total;
	int mem_threads;          /* workers the estimate assumed */

	struct ts_plan_device device; /* device(cuda); additive, see above */

	/* views(...): n_views > 0 when the pipeline ends in one; a sample is
	 * the views one after another (sample_bytes their sum), and
	 * height..layout above are view 0's. */
	int n_views;
	struct ts_plan_view views[TS_PLAN_MAX_VIEWS];
};

void ts_plan_destroy(struct ts_plan *plan);

/* Free an array of n ops that are not (yet) a plan's, with all they own;
 * free what one op owns (its fused op, parts, plugin, branches), leaving
 * it owning nothing. */
void ts_plan_ops_free(struct ts_op *ops, size_t n);
void ts_plan_op_fini(struct ts_op *op);

/* the policy family: free op's branches (and theirs), leaving none. */
void ts_plan_branches_free(struct ts_op *op);

/* Whether two plans write samples of the same shape, dtype and layout:
 * the condition for one to take over the other's ring. */
bool ts_plan_same_sample(const struct ts_plan *a, const struct ts_plan *b);

/* Whether a and b end in the same device(cuda) stage (or neither has
 * one): what a running device ring can keep serving across a reload. */
bool ts_plan_same_device(const struct ts_plan *a, const struct ts_plan *b);

/*
 * The plan cut after op `keep - 1` (1 <= keep < plan->n_ops), as the
 * runtime would run it: ops[0..keep) unchanged (same RNG stream ids, same
 * fusion), then an OUTPUT that only writes the image as it is (NHWC, its
 * own dtype), so an engine in discard mode hands out what stage keep - 1
 * made (`tsrun preview --stages`). The plan's shape fields say "variable
 * size" (sample_bytes 0) and expands is false, so the prefix must end
 * before any tile, filter or plugin. Everything but the op array is
 * borrowed from plan, which must outlive the prefix; free it with
 * ts_plan_prefix_fini, never ts_plan_destroy. Returns 0, TS_E_ARG (keep
 * out of range, or a tile, filter, plugin or views before it) or
 * TS_E_NOMEM.
 */
struct ts_plan_prefix {
	struct ts_plan plan;
	struct ts_op out_part;     /* the OUTPUT's one TO part */
};
int ts_plan_prefix_init(struct ts_plan_prefix *pre, const struct ts_plan *plan,
			size_t keep);
void ts_plan_prefix_fini(struct ts_plan_prefix *pre);

#endif
