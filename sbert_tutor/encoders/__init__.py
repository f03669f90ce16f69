"""The models: what turns text into an embedding or a pair into a score.

Rule of the folder: a module here defines a model or its on-disk form; it may use
:mod:`sbert_tutor.runtime` and :mod:`sbert_tutor.search.quantize` (``encode(precision=...)``), never
training or evaluation.

* :mod:`.sentence_encoder` -- :class:`~sbert_tutor.encoders.sentence_encoder.SentenceEncoder`: a
  transformer, pooling (:mod:`.pooling`), optional :mod:`.dense` layers and normalisation;
  ``encode``, ``similarity``, ``save``;
* :mod:`.cross_encoder` -- :class:`~sbert_tutor.encoders.cross_encoder.CrossEncoder`: one score for
  a pair read together; :mod:`.cross_encoder_folder` reads and writes its folders;
* :mod:`.protocol` -- the :class:`~sbert_tutor.encoders.protocol.Encoder` protocol every evaluator
  takes (any object with ``encode(texts, ...)``, sentence-transformers' models included);
* :mod:`.st_format` -- sentence-transformers' folder format (``modules.json``, pooling and Dense
  configs); :mod:`.model_card` -- the README written beside a saved model;
* :mod:`.resolve` -- a model name -> a local folder or a hub id, saying which;
* :mod:`.openvino` -- the same encoder run by OpenVINO (fp32 or int8), optional.
"""

__all__: list[str] = []
