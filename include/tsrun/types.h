/*
 * types.h - the types every public header shares: the element type and
 * the memory layout of a sample (libtsrun's batches, libtsclient's,
 * tsrun.serve's tensors, the ring header and the wire protocol).
 *
 * One enum each, with fixed values: they cross processes (the ring header
 * and the welcome carry them as integers) and the Python client reads
 * them by value (tsrun._lib), so a value never changes meaning.
 */
#ifndef TSRUN_TYPES_H
#define TSRUN_TYPES_H

#ifdef __cplusplus
extern "C" {
#endif

/* Element type of a sample's values. */
enum ts_dtype {
	TS_DTYPE_U8 = 0,         /* uint8 */
	TS_DTYPE_U16 = 1,        /* uint16 */
	TS_DTYPE_F16 = 2,        /* IEEE half (float16) */
	TS_DTYPE_F32 = 3,        /* float32 */
};

/* Order of an image sample's values: channels last (height, width,
 * channels) or first (channels, height, width). */
enum ts_layout {
	TS_LAYOUT_NHWC = 0,
	TS_LAYOUT_NCHW = 1,
};

#ifdef __cplusplus
}
#endif
#endif
