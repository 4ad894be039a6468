"""The named data sets plcore knows (no imports: the registry lists them without loading
the loaders)."""

__all__ = ["PALM_DATASETS", "UCI_DATASETS", "SKLEARN_DATASETS", "IDX_DATASETS", "CIFAR_DATASETS",
           "CIFAR100_SUPERCLASSES"]

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
#: CIFAR-10 and CIFAR-100 in the official python layout (Krizhevsky 2009), and PLCIFAR10 (Wang et al.,
#: PLENCH, ICLR 2025: CIFAR-10's training images with candidate sets from human annotators, beside
#: CIFAR-10's folder): name -> the folder looked for in the data home, its files, the label key
CIFAR_DATASETS = {
    "cifar10": {"folder": "cifar-10-batches-py", "train": tuple(f"data_batch_{i}" for i in range(1, 6)),
                "test": ("test_batch",), "meta": "batches.meta", "labels": "labels", "names": "label_names"},
    "cifar100": {"folder": "cifar-100-python", "train": ("train",), "test": ("test",), "meta": "meta",
                 "labels": "fine_labels", "names": "fine_label_names"},
    # the union of every annotator's set (PLENCH's PLCIFAR10_Aggregate) and the largest one (_Vaguest)
    "plcifar10": {"folder": "plcifar10", "file": "plcifar10.pkl", "images": "cifar10", "aggregation": "aggregate"},
    "plcifar10-vaguest": {"folder": "plcifar10", "file": "plcifar10.pkl", "images": "cifar10",
                          "aggregation": "vaguest"},
}
#: CIFAR-100's 20 superclasses (its coarse labels, in their index order) and their five classes each
#: (fine class names as in its ``meta`` file, whose index order is alphabetical)
CIFAR100_SUPERCLASSES = {
    "aquatic_mammals": ("beaver", "dolphin", "otter", "seal", "whale"),
    "fish": ("aquarium_fish", "flatfish", "ray", "shark", "trout"),
    "flowers": ("orchid", "poppy", "rose", "sunflower", "tulip"),
    "food_containers": ("bottle", "bowl", "can", "cup", "plate"),
    "fruit_and_vegetables": ("apple", "mushroom", "orange", "pear", "sweet_pepper"),
    "household_electrical_devices": ("clock", "keyboard", "lamp", "telephone", "television"),
    "household_furniture": ("bed", "chair", "couch", "table", "wardrobe"),
    "insects": ("bee", "beetle", "butterfly", "caterpillar", "cockroach"),
    "large_carnivores": ("bear", "leopard", "lion", "tiger", "wolf"),
    "large_man-made_outdoor_things": ("bridge", "castle", "house", "road", "skyscraper"),
    "large_natural_outdoor_scenes": ("cloud", "forest", "mountain", "plain", "sea"),
    "large_omnivores_and_herbivores": ("camel", "cattle", "chimpanzee", "elephant", "kangaroo"),
    "medium_mammals": ("fox", "porcupine", "possum", "raccoon", "skunk"),
    "non-insect_invertebrates": ("crab", "lobster", "snail", "spider", "worm"),
    "people": ("baby", "boy", "girl", "man", "woman"),
    "reptiles": ("crocodile", "dinosaur", "lizard", "snake", "turtle"),
    "small_mammals": ("hamster", "mouse", "rabbit", "shrew", "squirrel"),
    "trees": ("maple_tree", "oak_tree", "palm_tree", "pine_tree", "willow_tree"),
    "vehicles_1": ("bicycle", "bus", "motorcycle", "pickup_truck", "train"),
    "vehicles_2": ("lawn_mower", "rocket", "streetcar", "tank", "tractor"),
}
#: CIFAR-10's classes in their index order
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
