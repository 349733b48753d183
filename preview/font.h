/*
 * font.h - a built-in 5x7 bitmap font (descenders below) for the few words `tsrun preview`
 * writes into its pictures (positions, labels, file names, a caption), so
 * that drawing text needs no font library. Printable ASCII only; any other
 * byte draws as '?'.
 *
 * Text is drawn onto an 8-bit RGB struct ts_image (the canvas), clipped to
 * it. Pure functions; thread safe on distinct canvases.
 */
#ifndef TS_FONT_H_INCLUDED
#define TS_FONT_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include "image.h"

#define TS_FONT_W 5        /* glyph width, pixels, at scale 1 */
#define TS_FONT_H 8        /* glyph height, descenders included */
#define TS_FONT_ADVANCE 6  /* from one character to the next */
#define TS_FONT_LINE 10    /* from one line to the next */

/* Width in pixels of the first n bytes of s at scale (>= 1). */
int ts_font_width(size_t n, int scale);

/* How many characters fit in px pixels at scale. */
size_t ts_font_fit(int px, int scale);

/* Draw the first n bytes of s with its top-left corner at (x, y), each
 * glyph pixel a scale x scale square of colour rgb. Pixels outside the
 * canvas (8-bit, 3 channels) are left out. */
void ts_font_draw(struct ts_image *canvas, int x, int y, const char *s,
		  size_t n, const uint8_t rgb[3], int scale);

#endif
