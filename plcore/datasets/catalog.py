"""The named data sets plcore knows (no imports: the registry lists them without loading
the loaders)."""

__all__ = ["PALM_DATASETS", "UCI_DATASETS", "SKLEARN_DATASETS", "IDX_DATASETS"]

#: PALM partial-label sets: name -> accepted file stems (compared case- and punctuation-insensitively)
PALM_DATASETS = {
    "lost": ("lost",),
    "msrc-v2": ("msrcv2", "msrc-v2"),
    "msrc-v2-plc-splits": ("msrc-v2-plc-splits", "msrcv2plcsplits"),
    "bird-song": ("birdsong", "bird-song"),
    "soccer": ("soccer", "soccerplayer"),
    "yahoo-news": ("yahoonews", "yahoo!news", "yahoo-news"),
    "fg-net": ("fgnet", "fg-net"),
    "mir-flickr": ("mirflickr", "mir-flickr"),
}
#: UCI ARFF sets: name -> accepted file stems
UCI_DATASETS = {
    "ecoli": ("ecoli",),
    "satimage": ("statlog-landsat-satellite", "satimage"),
    "semeion": ("semeion",),
    "first-order-theorem": ("first-order-theorem", "firstordertheorem"),
    "flare": ("flare",),  # two nominal attributes: load_dataset("flare", categorical="onehot")
    "glass": ("glass",),  # its header declares a 7th class that no row has (kept: n_classes 7)
    "segment": ("segment",),
}
SKLEARN_DATASETS = ("iris", "wine", "breast_cancer", "digits")
#: image sets in IDX files (``train-images-idx3-ubyte[.gz]`` etc.): name -> the folder name looked
#: for in the data home, the folder a Debian package installs, that package, and the class names
IDX_DATASETS = {
    "fashion-mnist": {
        "folder": "fashion-mnist",
        "system": "/usr/share/datasets/fashion-mnist",
        "package": "dataset-fashion-mnist",
        "classes": ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                    "Ankle boot"),
    },
}
