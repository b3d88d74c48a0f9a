"""Stand-in (README.md) for wenet/utils/init_dataset.py (left out of the shared
copy): train_utils.init_dataset_and_dataloader builds the train and cv sets
through init_dataset, which calls wenet.dataset.dataset.Dataset. The recipe's
one changed line for equishard's batch plans is this module's import of
Dataset (the trainer swaps the name, as that edit would)."""
import copy

from wenet.dataset.dataset import Dataset


def init_asr_dataset(data_type, data_list_file, tokenizer=None, conf=None, partition=True):
    return Dataset(data_type, data_list_file, tokenizer, conf, partition)


def init_dataset(dataset_type, data_type, data_list_file, tokenizer=None, conf=None,
                 partition=True, split="train"):
    assert dataset_type in ["asr"]
    if split != "train":  # upstream's cv settings: no augmentation, one pass
        cv_conf = copy.deepcopy(conf)
        cv_conf["cycle"] = 1
        cv_conf["speed_perturb"] = False
        cv_conf["spec_aug"] = False
        cv_conf["spec_sub"] = False
        cv_conf["spec_trim"] = False
        cv_conf["shuffle"] = False
        cv_conf["list_shuffle"] = False
        conf = cv_conf
    return init_asr_dataset(data_type, data_list_file, tokenizer, conf, partition)
