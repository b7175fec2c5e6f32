"""Client for a Search-R1 retrieval server (``search_r1/search/retrieval_server.py``).

The paper's API: ``POST /retrieve`` with ``{"queries": [q], "topk": k, "return_scores": true}`` answers
``{"result": [[{"document": {"id": ..., "contents": ...}, "score": ...}, ...]]}``.
"""

from __future__ import annotations

from typing import Any

import httpx2

from .corpus import Hit, Passage
from .retrievers import RetrieverError


def retrieve_endpoint(url: str) -> str:
    """Search-R1's own configs pass the full ``.../retrieve`` URL; a bare base URL works too."""
    url = url.rstrip("/")
    return url if url.endswith("/retrieve") else f"{url}/retrieve"


def parse_response(data: Any, endpoint: str) -> list[Hit]:
    """The hits of the first (only) query, tolerating servers that omit scores."""
    try:
        rows = data["result"][0]
        if not isinstance(rows, list):
            raise TypeError("result[0] is not a list")
        hits = []
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise TypeError(f"result[0][{i}] is not an object")
            # With return_scores the server wraps each document; without, it sends documents bare.
            doc = row.get("document", row)
            hits.append(Hit(Passage.from_json(doc, fallback_id=str(i)), float(row.get("score", 0.0))))
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise RetrieverError(
            f"search backend at {endpoint} answered in an unexpected shape ({exc}); "
            'expected {"result": [[{"document": {"contents": ...}, "score": ...}]]}'
        ) from exc
    return hits


class RemoteRetriever:
    def __init__(self, url: str, timeout: float = 30.0) -> None:
        self.endpoint = retrieve_endpoint(url)
        self.timeout = timeout

    async def search(self, query: str, k: int) -> list[Hit]:
        payload = {"queries": [query], "topk": k, "return_scores": True}
        # A client per call: an AsyncClient is bound to one event loop and this server may be driven from
        # several (tests, in-process use); a loopback connection costs little next to the retrieval.
        try:
            async with httpx2.AsyncClient(timeout=self.timeout) as client:
                response = await client.post(self.endpoint, json=payload)
        except httpx2.TimeoutException as exc:
            raise RetrieverError(
                f"search backend at {self.endpoint} timed out after {self.timeout:g}s"
            ) from exc
        except httpx2.HTTPError as exc:
            raise RetrieverError(
                f"search backend at {self.endpoint} is unreachable ({type(exc).__name__}: {exc})"
            ) from exc
        if response.status_code != 200:
            raise RetrieverError(
                f"search backend at {self.endpoint} answered HTTP {response.status_code}: "
                f"{response.text[:200]}"
            )
        try:
            data = response.json()
        except ValueError as exc:
            raise RetrieverError(f"search backend at {self.endpoint} answered with invalid JSON") from exc
        return parse_response(data, self.endpoint)[:k]
