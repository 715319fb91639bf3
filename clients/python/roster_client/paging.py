"""Lists that fetch their pages as they are read.

A `Paged` walks a list route with `pageOffset`/`pageLimit` (Roster's stable, oldest-first order), one page
per request and only when iteration needs it, until a page comes back short. What it has fetched is kept:
iterating again, `len()` and indexing read the same snapshot (the last two fetch every page first).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Generic, Optional, TypeVar, overload

from roster_client._http import Transport
from roster_client._results import Result

T = TypeVar("T", bound=Result)

PAGE_LIMIT_MAX = 1000  # what Roster serves at most per page


class Paged(Generic[T]):
    def __init__(self, pages: Iterator[list[T]]) -> None:
        self._pages = pages
        self._items: list[T] = []
        self._done = False

    def __iter__(self) -> Iterator[T]:
        index = 0
        while True:
            if index < len(self._items):
                yield self._items[index]
                index += 1
            elif not self._fetch_page():
                return

    def _fetch_page(self) -> bool:
        if self._done:
            return False
        page = next(self._pages, None)
        if page is None:
            self._done = True
            return False
        self._items.extend(page)
        return True

    def _fetch_all(self) -> list[T]:
        while self._fetch_page():
            pass
        return self._items

    def __len__(self) -> int:
        return len(self._fetch_all())

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: Any) -> Any:
        return self._fetch_all()[index]

    def __repr__(self) -> str:
        state = "all fetched" if self._done else "more to fetch"
        return f"<Paged: {len(self._items)} fetched, {state}>"


def paged(
    transport: Transport,
    path: str,
    result: type[T],
    params: Optional[Mapping[str, Any]] = None,
    page_limit: int = 100,
) -> Paged[T]:
    """Every item of the list at `path`, as `result` objects, `page_limit` per request."""
    if not 1 <= page_limit <= PAGE_LIMIT_MAX:
        raise ValueError(f"page_limit must be from 1 to {PAGE_LIMIT_MAX}")

    def pages() -> Iterator[list[T]]:
        offset = 0
        while True:
            query = {**(params or {}), "pageOffset": offset, "pageLimit": page_limit}
            answer = transport.call("GET", path, params=query)
            items = [result.from_dict(item) for item in answer.body.get("data") or []]
            if items:
                yield items
            if len(items) < page_limit:
                return
            offset += len(items)

    return Paged(pages())
