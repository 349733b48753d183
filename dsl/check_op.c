/*
 * check_op.c - op building: a transform's ts_op filled from its bound
 * arguments, with the checks that involve more than one parameter.
 */
#include "checker.h"

#include <stdio.h>

static const char *plural(int n)
{
	return n == 1 ? "" : "s";
}

/* The op's size_h/size_w from `size` (N or [h, w]) and an optional
 * positional `width`. */
static int op_size(struct ts_check *c, const struct ts_opdef *def, struct ts_check_val *vals,
		   int *h, int *w)
{
	const struct ts_check_val *size = ts_check_arg(def, vals, "size");
	const struct ts_check_val *width = ts_check_arg(def, vals, "width");
	*h = size->h;
	*w = size->w;
	if (width->given) {
		if (size->num < 0) {
			ts_check_err(c, width->loc, "give either [h, w] or h, w",
			    "width given twice: size is already [%d, %d]",
			    size->h, size->w);
			return -1;
		}
		*w = (int)width->num;
	}
	return 0;
}

/* normalize(mean, std) or device(mean =, std =) with lists of different
 * lengths: one error that gives both counts and, when the image is
 * decoded here, its channels, at the list that is wrong (the std list
 * when neither matches the channels). */
void ts_check_mean_std_counts(struct ts_check *c, const char *who,
			    const struct ts_check_val *mean, const struct ts_check_val *std,
			    const struct ts_shape *in)
{
	const struct ts_check_val *at = std;
	char hint[192];

	if (in->encoded) {
		ts_check_err(c, at->loc, "give one mean and one std per channel",
		    "%s has %d mean value%s but %d std value%s", who,
		    mean->n_nums, plural(mean->n_nums), std->n_nums,
		    plural(std->n_nums));
		return;
	}
	if (std->n_nums == in->c)
		at = mean;
	snprintf(hint, sizeof(hint), "give %d value%s to both mean and std",
		 in->c, plural(in->c));
	ts_check_err(c, at->loc, hint,
	    "%s has %d mean value%s and %d std value%s, but the image has %d channel%s",
	    who, mean->n_nums, plural(mean->n_nums), std->n_nums,
	    plural(std->n_nums), in->c, plural(in->c));
}

/* Fill a ts_op from the bound arguments of a transform; in is the shape
 * before it. Returns -1 after reporting a cross-parameter problem (the op
 * is still usable). */
int ts_check_build_op(struct ts_check *c, const struct ts_opdef *def,
		    struct ts_check_val *vals, const struct ts_ast_call *call,
		    const struct ts_shape *in, struct ts_op *op)
{
	int rc = 0;

	op->kind = (enum ts_op_kind)def->op_kind;
	op->loc = call->loc;
	switch (op->kind) {
	case TS_OP_DECODE: {
		const struct ts_check_val *depth = ts_check_arg(def, vals, "depth");
		op->color = ts_check_arg(def, vals, "color")->word == 1 ? TS_COLOR_GRAY
							      : TS_COLOR_RGB;
		op->depth = (int)depth->num;
		if (op->depth != 8 && op->depth != 16) {
			ts_check_err(c, depth->loc, NULL,
			    "parameter 'depth' must be 8 or 16, got %d", op->depth);
			op->depth = 8;
			rc = -1;
		}
		break;
	}
	case TS_OP_RESIZE:
		rc = op_size(c, def, vals, &op->size_h, &op->size_w);
		/* resize(N): shorter side; resize([h, w]) or resize(h, w): exact */
		if (ts_check_arg(def, vals, "size")->num >= 0 && !ts_check_arg(def, vals, "width")->given)
			op->size_w = 0;
		op->interp = (enum ts_interp)ts_check_arg(def, vals, "interp")->word;
		op->antialias = ts_check_arg(def, vals, "antialias")->num != 0;
		break;
	case TS_OP_CENTER_CROP:
		rc = op_size(c, def, vals, &op->size_h, &op->size_w);
		break;
	case TS_OP_RANDOM_CROP:
		rc = op_size(c, def, vals, &op->size_h, &op->size_w);
		op->padding = (int)ts_check_arg(def, vals, "padding")->num;
		break;
	case TS_OP_RANDOM_RESIZED_CROP:
		rc = op_size(c, def, vals, &op->size_h, &op->size_w);
		op->scale_lo = ts_check_arg(def, vals, "scale")->lo;
		op->scale_hi = ts_check_arg(def, vals, "scale")->hi;
		op->ratio_lo = ts_check_arg(def, vals, "ratio")->lo;
		op->ratio_hi = ts_check_arg(def, vals, "ratio")->hi;
		op->interp = (enum ts_interp)ts_check_arg(def, vals, "interp")->word;
		if (op->scale_hi <= 0) {
			ts_check_err(c, ts_check_arg(def, vals, "scale")->loc, NULL,
			    "parameter 'scale' must allow a crop larger than 0");
			rc = -1;
		}
		break;
	case TS_OP_FLIP:
		op->horizontal = ts_check_arg(def, vals, "direction")->word == 0;
		op->p = ts_check_arg(def, vals, "p")->num;
		break;
	case TS_OP_COLOR_JITTER:
		op->brightness = ts_check_arg(def, vals, "brightness")->num;
		op->contrast = ts_check_arg(def, vals, "contrast")->num;
		op->saturation = ts_check_arg(def, vals, "saturation")->num;
		break;
	case TS_OP_GRAYSCALE: {
		const struct ts_check_val *ch = ts_check_arg(def, vals, "channels");
		op->channels = (int)ch->num;
		op->p = ts_check_arg(def, vals, "p")->num;
		if (op->channels != 1 && op->channels != 3) {
			ts_check_err(c, ch->loc, NULL,
			    "parameter 'channels' must be 1 or 3, got %d",
			    op->channels);
			op->channels = 1;
			rc = -1;
		}
		break;
	}
	case TS_OP_NORMALIZE: {
		const struct ts_check_val *mean = ts_check_arg(def, vals, "mean");
		const struct ts_check_val *std = ts_check_arg(def, vals, "std");
		if (mean->n_nums < 0 || std->n_nums < 0) {
			op->n_mean = -1; /* already reported */
			break;
		}
		if (mean->n_nums != std->n_nums) {
			ts_check_mean_std_counts(c, "normalize", mean, std, in);
			op->n_mean = -1; /* reported: no channel check */
			return -1;
		}
		op->n_mean = mean->n_nums;
		for (int i = 0; i < 4; i++) {
			op->mean[i] = i < mean->n_nums ? mean->nums[i] : 0.0f;
			op->std[i] = i < std->n_nums ? std->nums[i] : 1.0f;
		}
		break;
	}
	case TS_OP_TO:
		op->dtype = (enum ts_dtype)ts_check_arg(def, vals, "dtype")->word;
		op->layout = (enum ts_layout)ts_check_arg(def, vals, "layout")->word;
		break;
	case TS_OP_TILE: {
		const struct ts_check_val *stride = ts_check_arg(def, vals, "stride");
		rc = op_size(c, def, vals, &op->size_h, &op->size_w);
		op->stride_h = stride->given ? stride->h : op->size_h;
		op->stride_w = stride->given ? stride->w : op->size_w;
		break;
	}
	case TS_OP_FILTER:
		op->threshold = ts_check_arg(def, vals, "threshold")->num;
		op->max_fraction = ts_check_arg(def, vals, "max_fraction")->num;
		break;
	case TS_OP_PLUGIN: /* bind_plugin filled op->plugin */
	case TS_OP_OUTPUT:
		break;
	}
	return rc;
}
