let mean = [0.485, 0.456, 0.406
let ok = 1

pipeline train = folder("data/train") | | decode(rgb)

serve train {
    epochs = = 2
}
