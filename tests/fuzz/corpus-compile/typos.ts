pipeline p = flipp(horizontal) | decod | batch(x = 3/4..-1)
let KB = 1
serve q {}
