/*
 * tsrun_plugin.h - the ABI of plugin operators: a user C function that a
 * pipeline runs on every sample with `plugin("name.so", key = value, ...)`.
 *
 * A plugin is a shared object exporting tsrun_plugin_process() (required)
 * and tsrun_plugin_abi() (optional). tsrun never loads it into its own
 * process: every engine worker keeps one isolated plugin host process
 * that loads the plugin and calls it, one sample at a time. A plugin that
 * crashes, runs past its time limit (the reserved parameter timeout_ms,
 * default 1000) or returns an error fails only that sample, under the
 * pipeline's on_error policy (fail: the run stops naming the plugin and
 * the file; skip: the sample is dropped and listed as skipped); the host
 * is started again for the next sample. tsrun itself never goes down.
 * Its process may grow by at most the reserved parameter memory (default
 * 1 GiB, RLIMIT_AS): a malloc beyond it returns NULL. Processes it starts
 * are killed when its host stops, and the pixel buffers are sealed memfds
 * it cannot resize.
 *
 * Build one with:  cc -shared -fPIC -o myop.so myop.c
 *
 * The plugin sees pixels as interleaved HWC rows of uint8 (depth 8) or
 * uint16 (depth 16, native endianness) channels, the form every image has
 * between decode and normalize/to. It runs single-threaded in its host;
 * static state persists from one sample to the next until the host is
 * restarted, so it must not rely on it for correctness.
 *
 * This header is public, C99 and C++ compatible, and depends only on
 * <stdint.h>.
 */
#ifndef TSRUN_PLUGIN_H
#define TSRUN_PLUGIN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes. A plugin that exports
 * tsrun_plugin_abi() returning another value is refused at load time. */
#define TSRUN_PLUGIN_ABI 1

/* The two entry points are exported even from a library built with
 * -fvisibility=hidden. */
#if defined(__GNUC__) && __GNUC__ >= 4
#define TSRUN_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define TSRUN_PLUGIN_EXPORT
#endif

/* What tsrun_plugin_process() returns besides a negative error. */
#define TSRUN_PLUGIN_KEEP 0   /* the sample goes on, with out's pixels */
#define TSRUN_PLUGIN_DROP 1   /* drop the sample (a filter, e.g. clouds) */

/* One image. data points at height rows of stride bytes; a row holds
 * width * channels elements of depth bits (8: uint8_t, 16: uint16_t). */
struct tsrun_plugin_image {
	int32_t width;
	int32_t height;
	int32_t channels;    /* 1 to 4 */
	int32_t depth;       /* 8 or 16 */
	uint64_t stride;     /* bytes from one row to the next */
	void *data;
};

/* One named parameter of the plugin() call, as text: numbers as written
 * in decimal (0.5, 42), strings without quotes, words as themselves,
 * booleans as "true" or "false". timeout_ms is not passed. */
struct tsrun_plugin_param {
	const char *name;
	const char *value;
};

/*
 * Required. Process one sample.
 *
 * in:       the sample; read-only, valid during the call only.
 * out:      the result, of in's shape, with its own buffer that already
 *           holds a copy of in's pixels (a plugin that only filters, or
 *           changes a few pixels, need not copy). The plugin writes pixels
 *           into out->data and must not change any other field.
 * params:   the call's named parameters, in the order written; n_params
 *           of them. Valid for the life of the host process.
 *
 * Returns TSRUN_PLUGIN_KEEP (0) to keep the sample with out's pixels,
 * TSRUN_PLUGIN_DROP (1) to drop it, or a negative value for an error
 * (the sample then fails under on_error, reported with the value).
 */
TSRUN_PLUGIN_EXPORT
int tsrun_plugin_process(const struct tsrun_plugin_image *in,
			 struct tsrun_plugin_image *out,
			 const struct tsrun_plugin_param *params, int n_params);

/* Optional. Returns the TSRUN_PLUGIN_ABI the plugin was built against. */
TSRUN_PLUGIN_EXPORT int tsrun_plugin_abi(void);

#ifdef __cplusplus
}
#endif
#endif
