"""The fast encode paths, run on the CPU: width bucketing, the compute dtype, the
pipelined encode and the direct Rust tokenisation must give today's embeddings.

The CUDA-only pieces (pinned memory, asynchronous copies, events) sit behind the same code paths;
what a CPU can check of them (ordering, lagged copies, the rules that pick settings per device) is
checked here with the device or the GPU's capability given explicitly.
"""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest
import torch

from sbert_tutor import SentenceEncoder
from sbert_tutor.encoders.dense import Dense
from sbert_tutor.encoders.pooling import POOLING_MODES
from sbert_tutor.encoders.sentence_encoder import TruncationWarning
from sbert_tutor.runtime import tokenizing
from sbert_tutor.runtime.batching import (
    BUCKET_MULTIPLE,
    HostSink,
    Prefetcher,
    batch_positions,
    bucket_width,
    check_bucket,
    chunk_positions,
    pad_ids,
    resolve_bucket,
    thread_init,
)
from sbert_tutor.runtime.precision import (
    auto_compute_dtype,
    autocast_dtype,
    avoid_cudnn_attention,
    compute_context,
    resolve_compute_dtype,
)

pytestmark = pytest.mark.usefixtures("single_thread")

SENTENCES = [
    "A man is playing a guitar.",
    "short",
    "The cat sits outside on the mat, as it does every morning before breakfast.",
    "Two dogs run.",
    "A woman is slicing an onion with a knife on a wooden board in the kitchen.",
    "x",
    "one two three four five six",
    "Quotes \"inside\" text, and 'single' ones.",
    "Ünïcödé, émojis 🙂 and numbers 3.14159 survive tokenisation.",
    "A" + " very" * 30 + " long sentence cut at max_seq_length.",
] * 3
EPS32 = float(np.finfo(np.float32).eps)


def _close(a: np.ndarray, b: np.ndarray, ulps: int = 8) -> None:
    """Equal up to float32 rounding: reductions over more (masked) positions, or in another
    order, move a value by a few units in the last place of the embedding's scale (measured: at
    most 4 ulps on these models)."""
    np.testing.assert_allclose(b, a, rtol=0, atol=ulps * EPS32 * float(np.abs(a).max()))


def _encoder(tiny_bert, pooling="mean", dense=False, tokenizer=None, model=None):
    bert, tok = tiny_bert
    layers = []
    if dense:
        torch.manual_seed(1)
        layers = [Dense(32 * (2 if "+" in pooling else 1), 16)]
    return SentenceEncoder(
        model if model is not None else bert,
        tokenizer if tokenizer is not None else tok,
        pooling=pooling,
        max_seq_length=24,
        dense=layers,
    )


def _quiet_encode(enc, sentences, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncationWarning)
        return enc.encode(sentences, **kw)


# --------------------------------------------------------------------------- width bucketing
def test_bucket_width_rounds_up_and_stops_at_the_limit():
    assert [bucket_width(n, 32) for n in (1, 31, 32, 33, 64, 65)] == [32, 32, 32, 64, 64, 96]
    assert bucket_width(250, 32, limit=256) == 256 and bucket_width(240, 32, limit=250) == 250
    assert bucket_width(300, 32, limit=256) == 300  # already past the limit: left as it is
    assert bucket_width(17, None) == 17
    assert [bucket_width(n, (16, 64, 128)) for n in (3, 16, 17, 128, 200)] == [16, 16, 64, 128, 200]


@pytest.mark.parametrize(
    ("given", "expected"),
    [(None, None), (False, None), (0, None), (1, None), (True, BUCKET_MULTIPLE), (8, 8)],
)
def test_check_bucket(given, expected):
    assert check_bucket(given) == expected
    assert check_bucket([128, 32, 64, 32]) == (32, 64, 128)


@pytest.mark.parametrize("bad", [-1, [0, 8], [], 2.5, "32"])
def test_bad_bucket_says_what_to_use(bad):
    with pytest.raises(ValueError, match="bucket"):
        resolve_bucket(bad, "cpu", None, "right")


def test_auto_bucketing_is_on_for_cuda_half_precision_only():
    cuda = torch.device("cuda")
    assert resolve_bucket("auto", cuda, torch.bfloat16, "right") == BUCKET_MULTIPLE
    assert resolve_bucket("auto", cuda, torch.float16, "right") == BUCKET_MULTIPLE
    assert resolve_bucket("auto", cuda, torch.float32, "right") is None
    assert resolve_bucket("auto", "cpu", torch.bfloat16, "right") is None
    assert resolve_bucket("auto", cuda, torch.bfloat16, "left") is None  # would move positions
    assert resolve_bucket(16, "cpu", torch.float32, "left") == 16  # asked for: given


@pytest.mark.parametrize("left", [False, True])
def test_pad_ids_matches_a_row_by_row_fill(left):
    rng = np.random.default_rng(0)
    ids = [list(rng.integers(5, 1000, size=n)) for n in (7, 1, 12, 3, 12, 5)]
    width = 16
    got_ids, got_mask = pad_ids(ids, width, pad_id=0, left=left)
    want_ids = np.zeros((len(ids), width), np.int64)
    want_mask = np.zeros((len(ids), width), np.int64)
    for row, x in enumerate(ids):
        span = slice(width - len(x), width) if left else slice(0, len(x))
        want_ids[row, span] = x
        want_mask[row, span] = 1
    np.testing.assert_array_equal(got_ids, want_ids)
    np.testing.assert_array_equal(got_mask, want_mask)
    with pytest.raises(ValueError, match="more than the width"):
        pad_ids(ids, 8, pad_id=0)


def test_collate_buckets_within_max_seq_length(tiny_bert):
    enc = _encoder(tiny_bert)  # max_seq_length 24
    ids, _ = enc.token_ids(SENTENCES[:5])
    plain = enc.collate(ids)
    assert plain["input_ids"].shape[1] == max(len(x) for x in ids)
    wide = enc.collate(ids, bucket=16)
    assert wide["input_ids"].shape[1] == 24  # 32 would pass max_seq_length
    assert enc.collate(ids, bucket=8)["input_ids"].shape[1] % 8 == 0
    width = plain["input_ids"].shape[1]
    torch.testing.assert_close(wide["input_ids"][:, :width], plain["input_ids"])
    assert int(wide["attention_mask"].sum()) == int(plain["attention_mask"].sum())


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("pooling", [*POOLING_MODES, "cls+mean"])
def test_bucketed_encode_gives_the_same_embeddings(tiny_bert, pooling, dense):
    enc = _encoder(tiny_bert, pooling, dense)
    plain = _quiet_encode(enc, SENTENCES, batch_size=4, bucket=None)
    for bucket in (32, 8, (16, 20)):
        _close(plain, _quiet_encode(enc, SENTENCES, batch_size=4, bucket=bucket))


@pytest.mark.parametrize("pooling", ["lasttoken", "weightedmean", "mean"])
def test_bucketing_with_left_padding_and_rotary_positions(tiny_bert, pooling):
    """Left padding (decoder-style embedding models): extra padding goes on the left, and a
    rotary model, which sees only relative positions, gives the same embeddings."""
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    tokenizer = copy.deepcopy(tiny_bert[1])
    tokenizer.padding_side = "left"
    enc = _encoder(tiny_bert, pooling, tokenizer=tokenizer, model=LlamaModel(config).eval())
    batch = enc.collate([[5, 6, 7], [8]], bucket=8)
    assert batch["attention_mask"].tolist() == [[0] * 5 + [1] * 3, [0] * 7 + [1]]
    plain = _quiet_encode(enc, SENTENCES, batch_size=4, bucket=None)
    _close(plain, _quiet_encode(enc, SENTENCES, batch_size=4, bucket=32))


# --------------------------------------------------------------------------- compute dtype
@pytest.mark.parametrize(
    ("capability", "expected"),
    [
        ((7, 5), torch.float16),
        ((7, 0), torch.float16),
        ((8, 0), torch.bfloat16),
        ((9, 0), torch.bfloat16),
    ],
)
def test_auto_compute_dtype_follows_the_gpu(capability, expected):
    assert auto_compute_dtype("cuda", capability) == expected
    assert resolve_compute_dtype("auto", "cuda:0", capability) == expected


def test_compute_dtype_names():
    assert auto_compute_dtype("cpu", native_bf16=False) == torch.float32
    assert resolve_compute_dtype("auto", "cpu", native_bf16=False) == torch.float32
    assert resolve_compute_dtype("auto", "cpu", native_bf16=True) == torch.bfloat16
    assert auto_compute_dtype("mps") == torch.float32
    assert resolve_compute_dtype(None, "cpu") is None
    assert resolve_compute_dtype("BF16", "cpu") == torch.bfloat16
    assert resolve_compute_dtype(torch.float16, "cpu") == torch.float16
    for bad in ("int8", "float64", torch.float64, 16):
        with pytest.raises(ValueError, match="compute_dtype"):
            resolve_compute_dtype(bad, "cpu")


def test_autocast_only_over_fp32_weights():
    assert autocast_dtype(torch.bfloat16, torch.float32) == torch.bfloat16
    assert autocast_dtype(torch.float32, torch.float32) is None
    assert autocast_dtype(None, torch.float32) is None
    assert autocast_dtype(torch.float32, torch.bfloat16, explicit=False) is None  # "auto"
    with pytest.raises(ValueError, match=r"encoder\.float\(\)"):
        autocast_dtype(torch.float16, torch.bfloat16)


def test_attention_leaves_cudnn_out_under_cuda_half_precision():
    assert avoid_cudnn_attention("cuda", torch.bfloat16)
    assert avoid_cudnn_attention("cuda:1", torch.float16)
    assert not avoid_cudnn_attention("cuda", torch.float32)
    assert not avoid_cudnn_attention("cpu", torch.bfloat16)
    before = torch.backends.cuda.cudnn_sdp_enabled()
    with compute_context("cuda", None, torch.float16):  # half weights, no autocast needed
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.mem_efficient_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled() == before
    with compute_context("cpu", torch.bfloat16):
        assert torch.is_autocast_enabled("cpu")
        assert torch.backends.cuda.cudnn_sdp_enabled() == before


def test_bf16_encode_on_cpu_is_close_to_fp32(minilm):
    fp32 = minilm.encode(SENTENCES[:10])
    bf16 = minilm.encode(SENTENCES[:10], compute_dtype="bf16")
    assert bf16.dtype == np.float32
    diff = float(np.abs(bf16 - fp32).max())
    assert 0 < diff < 3e-3  # it did run in bf16, and stays within the bound
    assert not torch.is_autocast_enabled("cpu")


def _casts(enc, sentences, batch_size: int) -> int:
    """How many dtype casts (``aten::_to_copy``) a bf16 encode of ``sentences`` runs."""
    from torch.profiler import profile

    enc.encode(sentences[:batch_size], batch_size=batch_size, compute_dtype="bf16")  # warm
    with profile() as prof:
        enc.encode(sentences, batch_size=batch_size, compute_dtype="bf16")
    return sum(e.count for e in prof.key_averages() if e.key == "aten::_to_copy")


def test_bf16_encode_casts_each_weight_once_a_call(tiny_bert):
    """Autocast casts a Linear's fp32 weight and bias to bf16 once an ``encode`` call, not once
    a batch (``inference_context``: inference mode would skip autocast's cast cache). Each
    batch past the first adds only its activations' casts, fewer than the Linear layers' weight
    and bias tensors, which an uncached encode would cast again."""
    enc = _encoder(tiny_bert)
    linear_tensors = sum(
        1 + (m.bias is not None) for m in enc.model.modules() if isinstance(m, torch.nn.Linear)
    )
    sentences = [f"sentence number {i} of the test" for i in range(8)]
    one, four = _casts(enc, sentences[:2], 2), _casts(enc, sentences, 2)
    per_extra_batch = (four - one) / 3
    assert 0 < per_extra_batch < linear_tensors


def test_encoder_compute_dtype_setting(tiny_bert):
    bert, tok = tiny_bert
    enc = SentenceEncoder(bert, tok, compute_dtype="bf16")
    assert enc.describe()["compute_dtype"] == "bf16"
    assert "compute_dtype" not in _encoder(tiny_bert).describe()
    fp32 = enc.encode(SENTENCES[:6], compute_dtype="fp32")
    assert not np.array_equal(enc.encode(SENTENCES[:6]), fp32)  # the attribute applies
    with pytest.raises(ValueError, match="compute_dtype"):
        SentenceEncoder(bert, tok, compute_dtype="int4")


# --------------------------------------------------------------------------- pipeline
def test_batch_plan_covers_every_input_once():
    rng = np.random.default_rng(0)
    chars = rng.integers(1, 300, size=103)
    tokens = chars // 4 + 2
    for chunk_size in (None, 8, 16, 200):
        chunks = chunk_positions(chars, chunk_size, sort=True)
        batches = [b for c in chunks for b in batch_positions(c, tokens[c], 4, sort=True)]
        assert sorted(np.concatenate(batches).tolist()) == list(range(103))
        assert all(len(b) == 4 for b in batches[:-1]) and len(batches) == 26
    plain = chunk_positions(chars, None, sort=True)
    assert len(plain) == 1 and plain[0].tolist() == list(range(103))
    inorder = [
        b
        for c in chunk_positions(chars, 8, sort=False)
        for b in batch_positions(c, tokens[c], 4, False)
    ]
    assert np.concatenate(inorder).tolist() == list(range(103))


def _items(n, fail_at=None):
    for i in range(n):
        if i == fail_at:
            raise RuntimeError(f"producer failed at item {i}")
        yield i


def test_prefetcher_keeps_order_and_raises_the_producer_error():
    with Prefetcher(_items(50), depth=3) as items:
        assert list(items) == list(range(50))
    got = []
    with pytest.raises(RuntimeError, match="failed at item 7"), Prefetcher(_items(50, 7)) as items:
        got.extend(items)
    assert got == list(range(7))
    early = Prefetcher(_items(10**6), depth=2)
    assert next(iter(early)) == 0
    early.close()  # stops a producer that still has work
    assert not early._thread.is_alive()
    assert all(t.name != "sbert-tutor-prefetch" for t in threading.enumerate())


def test_producer_thread_selects_the_gpu_it_feeds(monkeypatch):
    chosen = []
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_device", chosen.append)
    assert thread_init("cpu") is None
    for device, index in (("cuda", 1), ("cuda:2", 2), (torch.device("cuda", 0), 0)):
        thread_init(device)()
        assert chosen[-1] == index


@pytest.mark.parametrize("lag", [0, 2, 100])
def test_host_sink_lands_rows_in_input_order(lag):
    rng = np.random.default_rng(1)
    want = rng.standard_normal((23, 5)).astype(np.float32)
    order = rng.permutation(23)
    sink = HostSink(23, 5, "cpu", asynchronous=True, lag=lag)
    for start in range(0, 23, 4):
        rows = order[start : start + 4]
        sink.add(rows, torch.from_numpy(want[rows]))
    np.testing.assert_array_equal(sink.finish(), want)


@pytest.mark.parametrize("n", [1, 3, 4, 29])
def test_pipelined_encode_equals_serial(tiny_bert, n):
    """One chunk (n <= 16 batches): the very same batches, so bit-identical embeddings."""
    enc = _encoder(tiny_bert)
    rng = np.random.default_rng(n)
    sentences = [SENTENCES[i] for i in rng.permutation(len(SENTENCES))][:n]
    serial = _quiet_encode(enc, sentences, batch_size=4, pipeline=False)
    piped = _quiet_encode(enc, sentences, batch_size=4, pipeline=True)
    np.testing.assert_array_equal(piped, serial)
    as_tensor = _quiet_encode(enc, sentences, batch_size=4, pipeline=True, convert_to_tensor=True)
    np.testing.assert_array_equal(as_tensor.numpy(), serial)
    one = _quiet_encode(enc, sentences[0], pipeline=True)
    assert one.shape == (32,)
    np.testing.assert_array_equal(one, _quiet_encode(enc, sentences[0], pipeline=False))


def test_pipelined_encode_in_chunks_keeps_input_order(tiny_bert, monkeypatch):
    """Several chunks of 2 batches (lengths shuffled, a last partial batch): other batches than
    the serial path's, the same embeddings up to rounding, each in its input row."""
    monkeypatch.setattr("sbert_tutor.encoders.sentence_encoder.CHUNK_BATCHES", 2)
    enc = _encoder(tiny_bert)
    rng = np.random.default_rng(0)
    sentences = [SENTENCES[i] for i in rng.permutation(len(SENTENCES))][:27]
    serial = _quiet_encode(enc, sentences, batch_size=3, pipeline=False)
    for bucket in (None, 8):
        piped = _quiet_encode(enc, sentences, batch_size=3, pipeline=True, bucket=bucket)
        _close(serial, piped)
    cut = enc.token_ids(sentences)[1]
    assert cut > 0
    with pytest.warns(TruncationWarning, match=f"{cut} of 27 inputs"):
        enc.encode(sentences, batch_size=3, pipeline=True)


def test_pipelined_encode_raises_tokenizer_errors_in_the_caller(tiny_bert, monkeypatch):
    enc = _encoder(tiny_bert)

    def broken(*args, **kwargs):
        raise RuntimeError("tokenizer exploded")

    monkeypatch.setattr(tokenizing, "token_ids", broken)
    with pytest.raises(RuntimeError, match="tokenizer exploded"):
        enc.encode(SENTENCES, batch_size=4, pipeline=True)
    assert all(t.name != "sbert-tutor-prefetch" for t in threading.enumerate())


def test_token_embeddings_through_the_pipeline(tiny_bert):
    enc = _encoder(tiny_bert)
    serial = _quiet_encode(enc, SENTENCES[:9], output_value="token_embeddings", bucket=None)
    piped = _quiet_encode(
        enc, SENTENCES[:9], output_value="token_embeddings", pipeline=True, bucket=16
    )
    for a, b in zip(serial, piped, strict=True):
        assert a.shape == b.shape
        _close(a.numpy(), b.numpy())


# --------------------------------------------------------------------------- tokenisation
def test_rust_tokenisation_gives_the_wrappers_ids(tiny_bert, real_sentences):
    tok = tiny_bert[1]
    assert tokenizing.rust_tokenizer(tok) is not None
    texts = [s.strip() for s in real_sentences] + ["query: " + s for s in SENTENCES]
    for limit in (256, 16):
        ids, cut = tokenizing.token_ids(tok, texts, limit)
        ref = tok(texts, truncation=True, max_length=limit)
        assert ids == ref["input_ids"]
        assert cut == [bool(e.overflowing) for e in ref.encodings]
        assert any(cut)
    # the tokenizer's own state must not leak into the wrapper's next call
    assert tok(["a b"])["input_ids"] == [[101, 1037, 1038, 102]]


def test_a_tokenizer_that_encodes_its_own_way_keeps_its_wrapper(tiny_bert):
    tok = copy.deepcopy(tiny_bert[1])
    base = type(tok)

    class Prefixing(base):
        def _encode_plus(self, text, *args, **kwargs):
            text = ["[prefix] " + t for t in text] if isinstance(text, list) else text
            return super()._encode_plus(text, *args, **kwargs)

    tok.__class__ = Prefixing
    assert tokenizing.rust_tokenizer(tok) is None
    ids, _ = tokenizing.token_ids(tok, ["a b"], 16)
    assert ids == tok(["a b"], truncation=True, max_length=16)["input_ids"]
    assert len(ids[0]) > 4  # the subclass's prefix is there


@pytest.fixture
def clean_parallelism(monkeypatch):
    for name in (tokenizing.PARALLELISM_ENV, tokenizing.OVERRIDE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(tokenizing, "_forked", False)
    yield monkeypatch


def test_tokenizer_threads_are_forced_on_and_restored(clean_parallelism):
    env = tokenizing.PARALLELISM_ENV
    with tokenizing.tokenizer_parallelism() as changed:
        assert not changed and env not in os.environ  # unset already means parallel
    clean_parallelism.setenv(env, "false")
    with tokenizing.tokenizer_parallelism() as changed:
        assert changed and os.environ[env] == "true"
        with tokenizing.tokenizer_parallelism():  # re-entrant
            assert os.environ[env] == "true"
        assert os.environ[env] == "true"
    assert os.environ[env] == "false"
    with pytest.raises(KeyError), tokenizing.tokenizer_parallelism():
        raise KeyError("restored even on errors")
    assert os.environ[env] == "false"


@pytest.mark.parametrize("where", ["opt-out", "forked", "worker"])
def test_tokenizer_threads_stay_off_where_unsafe(clean_parallelism, where):
    env = tokenizing.PARALLELISM_ENV
    clean_parallelism.setenv(env, "0")
    if where == "opt-out":
        clean_parallelism.setenv(tokenizing.OVERRIDE_ENV, "0")
    elif where == "forked":
        clean_parallelism.setattr(tokenizing, "_forked", True)
    else:
        clean_parallelism.setattr("multiprocessing.parent_process", lambda: object())
    with tokenizing.tokenizer_parallelism() as changed:
        assert not changed and os.environ[env] == "0"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_fork_after_forced_threads_does_not_hang(minilm_path):
    """Threads forced on in a parent, then a fork: the child must tokenise (serially), not wait
    for threads that did not survive the fork."""
    script = textwrap.dedent(
        f"""
        import os, sys
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        from transformers import AutoTokenizer
        from sbert_tutor.runtime import tokenizing
        tok = AutoTokenizer.from_pretrained({str(minilm_path)!r})
        texts = ["sentence number %d for the tokenizer" % i for i in range(4000)]
        with tokenizing.tokenizer_parallelism() as changed:
            assert changed
            tokenizing.token_ids(tok, texts, 32)
        pid = os.fork()
        if pid == 0:
            with tokenizing.tokenizer_parallelism() as changed:
                assert not changed
                tokenizing.token_ids(tok, texts, 32)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # a hung child is killed with its parent
    )
    try:
        _, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("the forked child hung in the tokenizer")
    assert proc.returncode == 0, err.decode()[-2000:]


X86_BF16 = """processor\t: 0
vendor_id\t: AuthenticAMD
flags\t\t: fpu vme avx2 avx512f avx512_bf16 avx512_vnni
"""
X86_OLD = """processor\t: 0
flags\t\t: fpu vme avx2 avx512f avx512_vnni
"""
ARM_BF16 = """processor\t: 0
Features\t: fp asimd bf16 i8mm sve
"""


@pytest.mark.parametrize(
    "cpuinfo, native",
    [(X86_BF16, True), (X86_OLD, False), (ARM_BF16, True), (None, False)],
    ids=["x86-avx512_bf16", "x86-without", "arm-bf16", "no-cpuinfo"],
)
def test_auto_on_a_cpu_follows_its_bf16_instructions(tmp_path, monkeypatch, cpuinfo, native):
    from sbert_tutor.runtime import precision as compute

    path = tmp_path / "cpuinfo"
    if cpuinfo is not None:
        path.write_text(cpuinfo)
    flags = compute.cpu_flags.__wrapped__(path)
    assert compute.cpu_has_native_bf16(flags) is native
    monkeypatch.setattr(compute, "cpu_flags", lambda: flags)
    assert resolve_compute_dtype("auto", "cpu") == (torch.bfloat16 if native else torch.float32)


def test_encode_auto_on_a_cpu_runs_bf16_only_where_native(minilm, monkeypatch, single_thread):
    """``encode(compute_dtype="auto")`` on a CPU: the bf16 embedding where the CPU has bf16
    instructions (close to fp32, not equal), the fp32 one where it has not (equal)."""
    from sbert_tutor.runtime import precision as compute

    sentences = ["A man is playing a guitar.", "The weather is lovely today, isn't it?"] * 4
    fp32 = minilm.encode(sentences, compute_dtype="fp32")
    bf16 = minilm.encode(sentences, compute_dtype="bf16")
    monkeypatch.setattr(compute, "cpu_flags", lambda: frozenset({"avx512_bf16"}))
    np.testing.assert_array_equal(minilm.encode(sentences, compute_dtype="auto"), bf16)
    assert 1e-6 < np.abs(bf16 - fp32).max() < 2e-2
    monkeypatch.setattr(compute, "cpu_flags", lambda: frozenset({"avx2"}))
    np.testing.assert_array_equal(minilm.encode(sentences, compute_dtype="auto"), fp32)
