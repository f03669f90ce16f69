"""Data loaders: plain typed records from a local folder (``SBERT_TUTOR_DATA``) or the hub."""

from sbert_tutor.data._files import DataNotFoundError
from sbert_tutor.data.sts import HUB_DATASETS, STS_TASKS, STSData, check_task, load_sts

__all__ = ["DataNotFoundError", "HUB_DATASETS", "STS_TASKS", "STSData", "check_task", "load_sts"]
