r"""Approximate nearest-neighbour (ANN) indexes over embeddings, built with FAISS (chapter 16).

Exact search (:func:`sbert_tutor.search.exact.semantic_search`) scores a query :math:`q` against every
one of the :math:`n` corpus embeddings :math:`c_j \in \mathbb{R}^d`: :math:`O(n\,d)` work a
query. An ANN index looks at a small part of the corpus instead and may miss some true
neighbours; how many it misses is measured by :func:`knn_recall_at_k` against exact search.

Kinds (:func:`build_index`; knob names are FAISS's, so its documentation applies as written):

===============  ===================================  ====================  =====================
kind             FAISS index                          build knobs           search knobs
===============  ===================================  ====================  =====================
``"flat"``       ``IndexFlatIP`` / ``IndexFlatL2``    (none)                (none)
``"hnsw"``       ``IndexHNSWFlat``                    ``M``,                ``efSearch``
                                                      ``efConstruction``,
                                                      ``layout_clusters``
``"hnsw_sq8"``   ``IndexHNSWSQ`` (8-bit)              ``M``,                ``efSearch``
                                                      ``efConstruction``,
                                                      ``layout_clusters``
``"ivf_flat"``   ``IndexIVFFlat``                     ``nlist``             ``nprobe``
``"ivf_pq"``     ``IndexIVFPQ``                       ``nlist``, ``m``,     ``nprobe``
                                                      ``nbits``
===============  ===================================  ====================  =====================

* **flat** is exact: every vector is scored (the reference, and the speed baseline).
* **HNSW** (Malkov and Yashunin, 2018) links every vector to about ``M`` near neighbours (``2M`` on
  the bottom layer) in a hierarchy of proximity graphs and searches greedily from the top layer
  down, keeping the ``efSearch`` best candidates seen on the bottom layer (``efConstruction``
  while building). Larger ``efSearch``: more of the graph visited, higher recall, slower.
* **HNSW-SQ8** is the same graph over vectors stored as one byte a coordinate (scalar
  quantisation with FAISS's per-dimension range :math:`[\min_i, \max_i]` of the corpus):
  the code :math:`q_i = \lfloor 255\,(c_i - \min_i) / (\max_i - \min_i) \rfloor` is decoded
  as :math:`\tilde c_i = \min_i + (q_i + \tfrac12)(\max_i - \min_i)/255`. The walk scores
  the query against :math:`\tilde c`: four times fewer bytes read a step than ``"hnsw"``,
  scores and neighbours approximate to that rounding.
* **Clustered layout** (``layout_clusters=C``, this library's knob; 0, the default, keeps FAISS's
  insertion order): after the graph is built, the stored vectors and graph nodes are reordered
  so that each of ``C`` k-means clusters of the corpus lies contiguous in memory (rows sorted by
  their cluster, :meth:`faiss.IndexHNSW.permute_entries`), and the index is wrapped in an
  ``IndexIDMap`` that maps positions back to row ids. The graph and so the results are the
  same; a walk, which moves between near vectors, then reads nearby memory, so more of it is
  already in the CPU's cache (graph reordering, Coleman et al., 2022). It costs one k-means
  at build time and 8 bytes a vector for the id map.
* **IVF** (inverted file; Jégou et al., 2011) clusters the corpus with k-means into ``nlist``
  cells with centroids :math:`\mu_1..\mu_{nlist}` (for ``"cosine"`` and ``"dot"`` FAISS runs
  spherical k-means: unit-norm centroids, assignment by inner product), stores each vector in
  the list of its best centroid, and at search time scores the query against the centroids, then exactly against the
  vectors of the ``nprobe`` best cells only: about :math:`nlist\cdot d + nprobe\,(n/nlist)\,d`
  work a query. ``nprobe = nlist`` visits every list: exact search.
* **IVF-PQ** stores, instead of each vector, a *product-quantisation* code of its residual
  :math:`r = c - \mu` to its centroid: :math:`r` is cut into ``m`` sub-vectors of :math:`d/m`
  dimensions, each replaced by the index of the nearest of :math:`2^{nbits}` sub-centroids
  learnt by k-means, so a vector takes :math:`m \cdot nbits / 8` bytes instead of :math:`4d`.
  Scores are approximated from the codes with look-up tables (asymmetric distance computation).

Scores
------
``metric`` is one of ``sbert_tutor.search.exact.SCORE_FUNCTIONS`` and means what it means there:
higher is better for all three.

* ``"cosine"``: both sides are L2-normalised, :math:`\hat x = x / \lVert x\rVert_2`, and the
  index uses the inner product, :math:`\cos(q, c) = \hat q \cdot \hat c` (for unit vectors the
  inner-product order is also the Euclidean order: :math:`\lVert \hat q - \hat c\rVert^2 =
  2 - 2\,\hat q\cdot\hat c`).
* ``"dot"``: the inner product :math:`q \cdot c` of the vectors as given.
* ``"euclidean"``: the *negative* distance :math:`-\lVert q - c\rVert_2` (FAISS works with the
  squared distance; the returned top-k are square-rooted and negated).

Missing results (an IVF search whose probed lists hold fewer than ``k`` vectors) have id ``-1``
and score ``-inf``.

FAISS is optional: ``pip install sbert-tutor[faiss]`` (or ``pip install faiss-cpu``).
"""

from __future__ import annotations

import difflib
import math
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sbert_tutor.search.exact import SCORE_FUNCTIONS
from sbert_tutor.similarity import as_matrix
from sbert_tutor.validation import check_choice

__all__ = [
    "AnnIndex",
    "SmallTrainingSetWarning",
    "build_index",
    "cluster_layout",
    "default_nlist",
    "knn_recall_at_k",
]

#: The index kinds :func:`build_index` builds (module docstring).
_INDEX_KINDS: tuple[str, ...] = ("flat", "hnsw", "hnsw_sq8", "ivf_flat", "ivf_pq")
#: Build knobs of each kind and their defaults (``nlist=None``: :func:`default_nlist`).
_BUILD_KNOBS: dict[str, dict[str, Any]] = {
    "flat": {},
    "hnsw": {"M": 32, "efConstruction": 40, "layout_clusters": 0},
    "hnsw_sq8": {"M": 32, "efConstruction": 40, "layout_clusters": 0},
    "ivf_flat": {"nlist": None},
    "ivf_pq": {"nlist": None, "m": 48, "nbits": 8},
}
#: Search knobs of each kind and their defaults (FAISS's own defaults).
_SEARCH_KNOBS: dict[str, dict[str, int]] = {
    "flat": {},
    "hnsw": {"efSearch": 16},
    "hnsw_sq8": {"efSearch": 16},
    "ivf_flat": {"nprobe": 1},
    "ivf_pq": {"nprobe": 1},
}


def _import_faiss() -> Any:
    """The ``faiss`` module, or an ``ImportError`` that says how to install it."""
    try:
        import faiss
    except ImportError as err:
        raise ImportError(
            "approximate indexes need FAISS: pip install sbert-tutor[faiss] (or pip install "
            "faiss-cpu); exact search without it: sbert_tutor.search.exact.semantic_search"
        ) from err
    return faiss


def default_nlist(n: int) -> int:
    r"""FAISS's rule of thumb for the number of IVF cells: :math:`\lfloor 4\sqrt{n} \rfloor`
    (at least 1, at most ``n``)."""
    return max(1, min(n, int(4 * math.sqrt(n))))


def _as_matrix(x: Any, name: str, dim: int | None = None) -> np.ndarray:
    """``x`` (array, tensor or list of vectors) as a C-contiguous float32 ``[n, d]`` array with
    finite values."""
    array = np.ascontiguousarray(as_matrix(x), dtype=np.float32)
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty [n, d] matrix, got shape {array.shape}")
    if dim is not None and array.shape[1] != dim:
        raise ValueError(f"{name} have dimension {array.shape[1]}, the index {dim}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contain NaN or infinite values")
    return array


def _unit_rows(faiss: Any, x: np.ndarray) -> np.ndarray:
    r""":math:`x / \lVert x\rVert_2` row by row in float32, as a new array (FAISS's
    ``normalize_L2``, in place on the copy; a zero row stays zero)."""
    out = x.copy()
    faiss.normalize_L2(out)
    return out


def _positive_int(kind: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{kind}: {name} must be a positive integer, got {value!r}")
    return int(value)


def _check_knobs(
    kind: str, given: Mapping[str, Any], allowed: Mapping[str, Any], what: str
) -> None:
    """Refuse a knob ``kind`` does not have: a ``TypeError`` (Python's error for an unexpected
    keyword) that lists the valid ones and names the nearest one, if any is close."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        names = ", ".join(allowed) if allowed else "none"
        lower = {name.lower(): name for name in allowed}  # efsearch, m: a case slip
        close = difflib.get_close_matches(unknown[0].lower(), list(lower), n=1)
        hint = f" Did you mean {lower[close[0]]!r}?" if close else ""
        raise TypeError(
            f"{kind} has no {what} knob {unknown[0]!r}; its {what} knobs: {names}.{hint}"
        )


@dataclass
class AnnIndex:
    """A built index: search it, and read its size and build time.

    Attributes:
        kind: one of ``_INDEX_KINDS``.
        metric: ``"cosine"``, ``"dot"`` or ``"euclidean"``.
        knobs: the build knobs used (defaults filled in).
        index: the FAISS index itself.
        build_seconds: wall time of training (k-means, PQ codebooks) plus adding the vectors.
    """

    kind: str
    metric: str
    knobs: dict[str, Any]
    index: Any = field(repr=False)
    build_seconds: float

    @property
    def dim(self) -> int:
        return int(self.index.d)

    def __len__(self) -> int:
        return int(self.index.ntotal)

    @property
    def nbytes(self) -> int:
        """Memory of the index: the length of ``faiss.serialize_index`` (vectors or codes, graph
        links, inverted lists, centroids and codebooks)."""
        return int(_import_faiss().serialize_index(self.index).size)

    def centroids(self) -> np.ndarray:
        """The IVF kinds' k-means centroids :math:`\\mu_1..\\mu_{nlist}`, ``[nlist, d]``."""
        if not self.kind.startswith("ivf"):
            raise ValueError(f"a {self.kind} index has no centroids; only ivf_flat and ivf_pq do")
        quantizer = _import_faiss().extract_index_ivf(self.index).quantizer
        return quantizer.reconstruct_n(0, quantizer.ntotal)

    def search(
        self,
        queries: Any,
        k: int = 10,
        *,
        efSearch: int | None = None,  # noqa: N803 - FAISS's own name
        nprobe: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` of every query.

        Args:
            queries: ``[n_queries, d]`` (or one ``[d]`` vector) array or tensor.
            k: results per query; a ``k`` larger than the index gives all of it (``min(k, n)``
                columns), as :func:`~sbert_tutor.search.exact.semantic_search` does.
            efSearch: HNSW kinds only: the candidate list of the search (default as in
                ``_SEARCH_KNOBS``).
            nprobe: IVF kinds only: the lists searched (capped by FAISS at ``nlist``).

        Returns:
            ``(scores, ids)``: ``[n_queries, min(k, n)]`` float32 scores, best first, and int64
            corpus row ids (``-1`` with score ``-inf`` where an approximate index found fewer).

        Raises:
            TypeError: a search knob this kind does not have (the message lists its knobs).
        """
        faiss = _import_faiss()
        given = {"efSearch": efSearch, "nprobe": nprobe}
        search_knobs = {name: value for name, value in given.items() if value is not None}
        _check_knobs(self.kind, search_knobs, _SEARCH_KNOBS[self.kind], "search")
        k = _positive_int(self.kind, "k", k)
        k = min(k, len(self))
        x = _as_matrix(queries, "queries", self.dim)
        if self.metric == "cosine":
            x = _unit_rows(faiss, x)
        knobs = {**_SEARCH_KNOBS[self.kind], **search_knobs}
        for name, value in knobs.items():
            _positive_int(self.kind, name, value)
        params = None
        if self.kind.startswith("hnsw"):
            params = faiss.SearchParametersHNSW(efSearch=int(knobs["efSearch"]))
        elif self.kind.startswith("ivf"):
            params = faiss.SearchParametersIVF(nprobe=int(knobs["nprobe"]))
        scores, ids = self.index.search(x, k, params=params)
        scores = scores.astype(np.float32)
        ids = ids.astype(np.int64)
        if self.metric == "euclidean":
            scores = -np.sqrt(np.maximum(scores, 0.0))
        scores[ids < 0] = -np.inf
        return scores, ids


def _faiss_metric(faiss: Any, metric: str) -> int:
    return faiss.METRIC_L2 if metric == "euclidean" else faiss.METRIC_INNER_PRODUCT


def _build_knobs(kind: str, n: int, d: int, given: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults filled in and every knob checked against the data."""
    _check_knobs(kind, given, _BUILD_KNOBS[kind], "build")
    knobs = {**_BUILD_KNOBS[kind], **given}
    if "nlist" in knobs and knobs["nlist"] is None:
        knobs["nlist"] = default_nlist(n)
    for name, value in knobs.items():
        if name == "layout_clusters":  # 0: FAISS's insertion order
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
                raise ValueError(
                    f"{kind}: layout_clusters must be 0 (insertion order) or a positive "
                    f"integer, got {value!r}"
                )
        else:
            _positive_int(kind, name, value)
    if knobs.get("layout_clusters", 0) > n:
        raise ValueError(
            f"{kind}: layout_clusters={knobs['layout_clusters']} is larger than the corpus ({n} "
            f"vectors); use 0 (insertion order) or at most {n} (about 4*sqrt(n) = "
            f"{default_nlist(n)} is a sound choice)"
        )
    if "nlist" in knobs and knobs["nlist"] > n:
        raise ValueError(
            f"{kind}: nlist={knobs['nlist']} is larger than the training set ({n} vectors); "
            f"k-means needs at least one vector a cell: use nlist <= {n} (FAISS suggests "
            f"about 4*sqrt(n) = {default_nlist(n)})"
        )
    if kind == "ivf_pq":
        m, nbits = knobs["m"], knobs["nbits"]
        if d % m:
            divisors = [i for i in range(1, d + 1) if d % i == 0]
            raise ValueError(
                f"ivf_pq: m={m} sub-quantisers must divide the dimension {d}; choose one of "
                f"{divisors}"
            )
        if nbits > 16:
            raise ValueError(f"ivf_pq: nbits={nbits} is too large; use 4 to 16 (8 is usual)")
        if 2**nbits > n:
            raise ValueError(
                f"ivf_pq: nbits={nbits} needs at least 2**{nbits} = {2**nbits} training vectors "
                f"for its sub-quantiser k-means, got {n}; lower nbits or give more vectors"
            )
    return knobs


#: k-means points a centroid below which FAISS calls its training set too small.
_MIN_POINTS_PER_CENTROID = 39


class SmallTrainingSetWarning(UserWarning):
    """Fewer training vectors than k-means wants (39 a centroid): the centroids may be poor."""


def _quiet_kmeans(index: Any, kind: str, n: int, knobs: Mapping[str, Any]) -> None:
    """One Python warning instead of FAISS's line per k-means run (48 for a 48-slice PQ)."""
    wanted = {"nlist": knobs["nlist"]}
    index.cp.min_points_per_centroid = 1
    if kind == "ivf_pq":
        wanted["2**nbits"] = 2 ** knobs["nbits"]
        index.pq.cp.min_points_per_centroid = 1
    small = {k: v for k, v in wanted.items() if n < _MIN_POINTS_PER_CENTROID * v}
    if small:
        name, k = next(iter(small.items()))
        warnings.warn(
            f"{kind}: {n} training vectors for {name}={k} k-means centroids; k-means wants at "
            f"least {_MIN_POINTS_PER_CENTROID} a centroid ({_MIN_POINTS_PER_CENTROID * k}), so "
            "the centroids may be poor (recall suffers, results stay valid)",
            SmallTrainingSetWarning,
            stacklevel=3,
        )


def build_index(
    embeddings: Any,
    kind: str,
    metric: str = "cosine",
    *,
    M: int | None = None,  # noqa: N803 - FAISS's own names
    efConstruction: int | None = None,  # noqa: N803
    layout_clusters: int | None = None,
    nlist: int | None = None,
    m: int | None = None,
    nbits: int | None = None,
) -> AnnIndex:
    """Build a FAISS index of ``embeddings`` (the module docstring describes kinds and metrics).

    The IVF kinds train their k-means (and PQ codebooks) on all ``embeddings`` (FAISS samples
    at most 256 vectors a centroid) with FAISS's fixed seed, then add them. Row ``j`` of
    ``embeddings`` has id ``j``.

    Args:
        embeddings: ``[n, d]`` array or tensor (copied to float32; the input is never changed).
        kind: ``"flat"``, ``"hnsw"``, ``"hnsw_sq8"``, ``"ivf_flat"`` or ``"ivf_pq"``.
        metric: ``"cosine"`` (default), ``"dot"`` or ``"euclidean"``.
        M, efConstruction, layout_clusters: the HNSW kinds' knobs; nlist: the IVF kinds'; m,
            nbits: IVF-PQ's (defaults in ``_BUILD_KNOBS``; ``None``: the default). A knob
            the kind does not have is refused.

    Returns:
        :class:`AnnIndex`.

    Raises:
        ImportError: FAISS is not installed (the message says how to install it).
        TypeError: a knob this kind does not have (the message lists its knobs and names the
            nearest, e.g. ``m`` for HNSW's ``M``).
        ValueError: unknown kind or metric; a knob that does not fit the data (``nlist``
            larger than the number of vectors, ``m`` not dividing ``d``, too few vectors for
            ``2**nbits`` PQ centroids).

    >>> import numpy as np
    >>> x = np.eye(3, dtype=np.float32)
    >>> index = build_index(x, "flat")  # doctest: +SKIP
    >>> index.search(x[:1], k=2)[1].tolist()  # doctest: +SKIP
    [[0, 1]]
    """
    kind = check_choice(kind, _INDEX_KINDS, "index kind")
    metric = check_choice(metric, SCORE_FUNCTIONS, "metric")
    faiss = _import_faiss()
    x = _as_matrix(embeddings, "embeddings")
    if metric == "cosine":
        x = _unit_rows(faiss, x)
    n, d = x.shape
    given = {
        "M": M,
        "efConstruction": efConstruction,
        "layout_clusters": layout_clusters,
        "nlist": nlist,
        "m": m,
        "nbits": nbits,
    }
    knobs = {name: value for name, value in given.items() if value is not None}
    settings = _build_knobs(kind, n, d, knobs)
    faiss_metric = _faiss_metric(faiss, metric)
    start = time.perf_counter()
    if kind == "flat":
        index = faiss.IndexFlatL2(d) if metric == "euclidean" else faiss.IndexFlatIP(d)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, settings["M"], faiss_metric)
        index.hnsw.efConstruction = settings["efConstruction"]
    elif kind == "hnsw_sq8":
        qtype = faiss.ScalarQuantizer.QT_8bit
        index = faiss.IndexHNSWSQ(d, qtype, settings["M"], faiss_metric)
        index.hnsw.efConstruction = settings["efConstruction"]
        index.train(x)  # the per-dimension ranges of the 8-bit codes
    else:
        quantizer = faiss.IndexFlatL2(d) if metric == "euclidean" else faiss.IndexFlatIP(d)
        if kind == "ivf_flat":
            index = faiss.IndexIVFFlat(quantizer, d, settings["nlist"], faiss_metric)
        else:
            index = faiss.IndexIVFPQ(
                quantizer, d, settings["nlist"], settings["m"], settings["nbits"], faiss_metric
            )
        _quiet_kmeans(index, kind, n, settings)
        index.train(x)
    index.add(x)
    if settings.get("layout_clusters"):
        index = cluster_layout(faiss, index, x, settings["layout_clusters"], metric)
    seconds = time.perf_counter() - start
    return AnnIndex(kind=kind, metric=metric, knobs=settings, index=index, build_seconds=seconds)


def cluster_layout(faiss: Any, index: Any, x: np.ndarray, clusters: int, metric: str) -> Any:
    """Reorder a built HNSW index so that each of ``clusters`` k-means clusters of ``x`` is
    contiguous in memory, and wrap it in ``faiss.IndexIDMap`` so that searches still return
    row ids of ``x`` (the module docstring's clustered layout).

    The clusters come from FAISS's k-means (10 iterations, seed 0, at most 64 training points a
    centroid; spherical for ``"cosine"`` and ``"dot"``); rows are sorted by cluster, ties kept
    in row order, and ``permute_entries`` moves stored position ``i`` to hold row
    ``order[i]``, which is also the id map.
    """
    kmeans = faiss.Kmeans(
        x.shape[1],
        clusters,
        niter=10,
        seed=0,
        spherical=metric != "euclidean",
        max_points_per_centroid=64,
        min_points_per_centroid=1,
    )
    kmeans.train(x)
    _, cluster = kmeans.index.search(x, 1)
    order = np.argsort(cluster[:, 0], kind="stable").astype(np.int64)
    index.permute_entries(order)
    # IndexIDMap only wraps an empty index (it cannot know the ids of vectors already there):
    # wrap it as empty, then give it the vectors' ids and count
    n = index.ntotal
    index.ntotal = 0
    wrapped = faiss.IndexIDMap(index)
    index.ntotal = n
    faiss.copy_array_to_vector(order, wrapped.id_map)
    wrapped.ntotal = n
    return wrapped


def knn_recall_at_k(found_ids: Any, exact_ids: Any, k: int) -> float:
    r"""Recall@k of an approximate search against exact search: the share of the true top-k found.

    .. math::

       \mathrm{recall@}k = \frac{1}{|Q|} \sum_{q \in Q}
       \frac{|\,\mathrm{found}_k(q) \cap \mathrm{exact}_k(q)\,|}{k}

    where :math:`\mathrm{found}_k(q)` are the first ``k`` ids the index returned for query
    :math:`q` and :math:`\mathrm{exact}_k(q)` the first ``k`` of exact search. This is
    :func:`sbert_tutor.metrics.recall_at_k` with the exact top-k as the "relevant" documents
    (so :math:`R = k`); ``-1`` ids (not found) never count.

    Args:
        found_ids: ``[n_queries, >= k]`` ids from the index, best first.
        exact_ids: ``[n_queries, >= k]`` ids from exact search, best first.
        k: the cutoff.

    >>> knn_recall_at_k([[1, 2, 3], [4, 5, 6]], [[3, 2, 9], [4, 7, 8]], k=2)
    0.5
    """
    found = np.asarray(found_ids)
    exact = np.asarray(exact_ids)
    k = _positive_int("knn_recall_at_k", "k", k)
    if found.ndim != 2 or exact.ndim != 2 or found.shape[0] != exact.shape[0]:
        raise ValueError(
            f"found_ids {found.shape} and exact_ids {exact.shape} must be [n_queries, k] "
            "matrices with the same number of rows"
        )
    if found.shape[1] < k or exact.shape[1] < k:
        raise ValueError(f"k={k} but only {min(found.shape[1], exact.shape[1])} ids a query")
    if found.shape[0] == 0:
        raise ValueError("no queries")
    hits = 0
    for f, e in zip(found[:, :k], exact[:, :k], strict=True):
        hits += len(set(f[f >= 0].tolist()) & set(e.tolist()))
    return hits / (found.shape[0] * k)
