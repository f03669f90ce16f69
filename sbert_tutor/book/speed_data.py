"""Real sentences of mixed lengths for speed measurements: STSb test sentences + MS MARCO passages."""

from __future__ import annotations

import random


def mixed_length_sentences(
    n_sts: int = 1500, n_passages: int = 500, seed: int = 0
) -> tuple[list[str], list[str]]:
    """Up to ``n_sts`` distinct STSb test sentences and ``n_passages`` MS MARCO passages, shuffled.

    Passages come from ``msmarco/corpus_mini.tsv`` of ``SBERT_TUTOR_DATA`` (skipped when the data
    come from the hub). Returns the sentences and the data files read.
    """
    from sbert_tutor.data import load_sts
    from sbert_tutor.data._files import local_file, local_root, read_tsv

    stsb = load_sts("stsb", "test")
    sentences = list(dict.fromkeys(stsb.sentences1 + stsb.sentences2))[:n_sts]
    files = [str(f) for f in stsb.files]
    root = local_root()
    if root is not None and n_passages:
        corpus = local_file(root, "msmarco/corpus_mini.tsv")
        files.append(str(corpus))
        for i, row in enumerate(read_tsv(corpus)):
            if i >= n_passages:
                break
            sentences.append(row["passage"])
    random.Random(seed).shuffle(sentences)
    return sentences, files
