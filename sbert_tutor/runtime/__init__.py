"""How a model runs: batches, numeric precision and tokenising.

Rule of the folder: nothing here knows what a sentence embedding is; these modules serve the
encoders (:mod:`sbert_tutor.encoders`) and the trainer, and import only the root modules.

* :mod:`.batching` -- length-bucketed batches, padding, prefetching to the device;
* :mod:`.modes` -- eval mode for a block, each submodule's train/eval mode given back after;
* :mod:`.precision` -- the compute dtype (fp32, fp16, bf16), autocast and inference contexts;
* :mod:`.tokenizing` -- the fast tokenizer and its parallelism setting.
"""

__all__: list[str] = []
