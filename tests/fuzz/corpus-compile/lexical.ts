let s = "unterminated
let t = @ .5 1/0 1e999 "\q"
