"""One bounded, thread-safe LRU, used by every cache of the server.

Bounded twice: by entries and by bytes (each value's size comes from `size_of`). The
newest entry is always kept, even when it alone is over the byte budget, so a request
never computes a value it cannot hand back; the next insertion evicts it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class LRU(Generic[V]):
    def __init__(self, max_entries: int, max_bytes: int | None = None, size_of: Callable[[V], int] | None = None):
        self.max_entries = max(1, max_entries)
        self.max_bytes = max_bytes
        self.size_of = size_of or (lambda _: 0)
        self.nbytes = 0
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def get(self, key: Hashable) -> V | None:
        """The value (now the most recently used), or None."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: Hashable, value: V) -> V:
        """Store value (replacing an older one under key), evict past the bounds, return value."""
        size = self.size_of(value)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.nbytes -= old[1]
            self._items[key] = (value, size)
            self.nbytes += size
            while len(self._items) > 1 and (len(self._items) > self.max_entries or self._over_bytes()):
                _, (_, dropped) = self._items.popitem(last=False)
                self.nbytes -= dropped
        return value

    def _over_bytes(self) -> bool:
        return self.max_bytes is not None and self.nbytes > self.max_bytes

    def drop_oldest(self) -> bool:
        """Forget the least recently used entry; False when there is none."""
        with self._lock:
            if not self._items:
                return False
            _, (dropped, size) = self._items.popitem(last=False)
            self.nbytes -= size
        del dropped  # the last reference may go here, outside the lock (a model's finalizer runs then)
        return True
