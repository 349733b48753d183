let x 5
pipeline p = decode(rgb
serve p { ring = 8 batches
let y = [1, 2
