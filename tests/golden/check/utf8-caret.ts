# Columns count characters; the caret line gives a wide (CJK) character
# two columns and keeps tabs, so it lines up in a terminal.
pipeline train = folder("日本") | decode(rgb) | flipp | center_crop(8) | batch(8)
pipeline tabs = folder("é	ü") | decode(rgb) | filp | center_crop(8) | batch(8)
