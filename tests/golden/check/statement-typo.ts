# A statement keyword misspelled.
pipline t = synthetic(16) | batch(4)
