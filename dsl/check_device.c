/*
 * check_device.c - the device(cuda) stage: what the GPU makes of the
 * uint8 nhwc samples the CPU stages write.
 */
#include "checker.h"

#include <stdio.h>

/* device(cuda [, dtype, mean, std, layout]): the GPU finishing stage. It
 * takes the uint8 nhwc samples the CPU stages write (the ring keeps those:
 * the plan's own shape is not changed) and describes what the GPU makes
 * of them in *dev. Errors are reported; dev is filled regardless. */
void ts_check_device(struct ts_check *c, const struct ts_opdef *def,
			 struct ts_check_val *vals, const struct ts_ast_call *call,
			 const struct ts_shape *shape,
			 const struct ts_ast_call *prev,
			 struct ts_plan_device *dev)
{
	const struct ts_check_val *mean = ts_check_arg(def, vals, "mean");
	const struct ts_check_val *std = ts_check_arg(def, vals, "std");
	char buf[64];

	if (prev)
		ts_check_err(c, call->name_loc, NULL, "'device' given twice");
	*dev = (struct ts_plan_device){
		.cuda = true, .loc = call->loc,
		.dtype = ts_check_arg(def, vals, "dtype")->word == 1 ? TS_DTYPE_F16 : TS_DTYPE_F32,
		.layout = TS_LAYOUT_NCHW,
	};
	if (shape->encoded) {
		ts_check_err(c, call->name_loc, "add decode(rgb) before device(cuda)",
		    "'device' needs decoded pixels, but the images are still encoded here");
	} else if (shape->dtype != TS_DTYPE_U8 || shape->layout != TS_LAYOUT_NHWC) {
		ts_check_shape_str(shape, buf, sizeof(buf));
		ts_check_err(c, call->name_loc,
		    "end the CPU stages in to(uint8, nhwc) and give normalize's mean and std to device(...)",
		    "'device' takes uint8 nhwc pixels, but the data is %s here", buf);
	}
	if (mean->given != std->given) {
		ts_check_err(c, call->loc, "give both mean and std, or neither",
		    "device normalizes only with both mean and std");
	} else if (mean->given && mean->n_nums >= 0 && std->n_nums >= 0) {
		if (mean->n_nums != std->n_nums)
			ts_check_mean_std_counts(c, "device", mean, std, shape);
		else if (!shape->encoded && mean->n_nums != shape->c)
			ts_check_err(c, mean->loc, NULL,
			    "device has %d mean and std value%s, but the image has %d channel%s",
			    mean->n_nums, mean->n_nums == 1 ? "" : "s",
			    shape->c, shape->c == 1 ? "" : "s");
		dev->normalize = true;
		dev->n_mean = mean->n_nums;
		for (int i = 0; i < 4; i++) {
			dev->mean[i] = i < mean->n_nums ? mean->nums[i] : 0.0f;
			dev->std[i] = i < std->n_nums ? std->nums[i] : 1.0f;
		}
	}
	dev->sample_bytes = (size_t)shape->h * (size_t)shape->w *
			    (size_t)shape->c * ts_dtype_size(dev->dtype);
}
