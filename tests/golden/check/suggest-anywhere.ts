# "did you mean" anywhere in a list: an interpolation named without its
# prefix (cubic, linear), an operator past the registry's 32nd, a let past
# the file's 64th and a parameter named as torchvision names it.
let size_00 = 100
let size_01 = 101
let size_02 = 102
let size_03 = 103
let size_04 = 104
let size_05 = 105
let size_06 = 106
let size_07 = 107
let size_08 = 108
let size_09 = 109
let size_10 = 110
let size_11 = 111
let size_12 = 112
let size_13 = 113
let size_14 = 114
let size_15 = 115
let size_16 = 116
let size_17 = 117
let size_18 = 118
let size_19 = 119
let size_20 = 120
let size_21 = 121
let size_22 = 122
let size_23 = 123
let size_24 = 124
let size_25 = 125
let size_26 = 126
let size_27 = 127
let size_28 = 128
let size_29 = 129
let size_30 = 130
let size_31 = 131
let size_32 = 132
let size_33 = 133
let size_34 = 134
let size_35 = 135
let size_36 = 136
let size_37 = 137
let size_38 = 138
let size_39 = 139
let size_40 = 140
let size_41 = 141
let size_42 = 142
let size_43 = 143
let size_44 = 144
let size_45 = 145
let size_46 = 146
let size_47 = 147
let size_48 = 148
let size_49 = 149
let size_50 = 150
let size_51 = 151
let size_52 = 152
let size_53 = 153
let size_54 = 154
let size_55 = 155
let size_56 = 156
let size_57 = 157
let size_58 = 158
let size_59 = 159
let size_60 = 160
let size_61 = 161
let size_62 = 162
let size_63 = 163
let size_64 = 164
let size_65 = 165
let size_66 = 166
let size_67 = 167
let size_68 = 168
let size_69 = 169

pipeline train =
    synthetic(8, width = 64, height = 64)
    | resize(96, interp = cubic)
    | rotate(10, interpolation = linear)
    | center_crop(size_69x)
    | rand_augmnt(2, 9)
    | trivial_augment_wid
    | resize(32, interp = bilinear, interpolation = bilinear)
    | batch(4)
