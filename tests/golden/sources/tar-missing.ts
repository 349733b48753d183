# tsrun check --sources: shards that are not there
pipeline p =
    tar("shards/train-{000..001}.tar")
    | decode(rgb)
    | resize(32)
    | center_crop(32)
    | batch(4)
