/*
 * check_source.c - the source stage: folder, list, tar or synthetic
 * arguments into the plan's ts_source and the shape it starts with.
 */
#include "checker.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

int ts_check_source(struct ts_check *c, const struct ts_opdef *def,
		       struct ts_check_val *vals, const struct ts_ast_call *call,
		       struct ts_plan *plan, struct ts_shape *shape)
{
	struct ts_source *src = &plan->source;

	*shape = (struct ts_shape){ .encoded = true, .c = 3 };
	if (strcmp(def->name, "folder") == 0) {
		const struct ts_check_val *ext = ts_check_arg(def, vals, "ext");
		src->kind = TS_SRC_FOLDER;
		src->path = ts_strdup(ts_check_arg(def, vals, "path")->str);
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
	} else if (strcmp(def->name, "list") == 0) {
		src->kind = TS_SRC_LIST;
		src->path = ts_strdup(ts_check_arg(def, vals, "path")->str);
	} else if (strcmp(def->name, "tar") == 0) {
		src->kind = TS_SRC_TAR;
		src->path = ts_strdup(ts_check_arg(def, vals, "pattern")->str);
	} else {
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
	}
	/* A missing or mistyped path was reported already (bind_args left
	 * it NULL); only a failed copy of a given one is out of memory. */
	if (src->kind != TS_SRC_SYNTHETIC && !src->path &&
	    ts_check_arg(def, vals, src->kind == TS_SRC_TAR ? "pattern" : "path")->str)
		return TS_E_NOMEM;
	(void)call;
	return 0;
}
