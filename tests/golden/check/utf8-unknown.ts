# A fullwidth digit is no digit: the caret covers its two columns.
pipeline wide = folder("データ") | decode(rgb) | flip(p = ０.5) | batch(8)
