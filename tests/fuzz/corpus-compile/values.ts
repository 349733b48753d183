let a = [[[[[[1]]]]], [], [true, false, "x", -3/4, 4 GiB, 1..2,],]
