# An empty socket path, one longer than a Unix socket address holds, and
# an empty group are refused at the setting.
pipeline a = synthetic(8) | batch(4)
pipeline b = synthetic(8) | batch(4)
pipeline c = synthetic(8) | batch(4)

serve a { socket = "" }
serve b { socket = "/tmp/00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000.sock" }
serve c { group = "" }
