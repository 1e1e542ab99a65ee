"""The config the ``--workers`` supervisor checked, published to its workers, and their answers.

The supervisor publishes the text it checked under a generation number in
the workers' private folder; each worker loads it (on SIGHUP, or at its
start) and acknowledges the generation it serves, or why it could not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson

from laneway.config.loaded import LoadedConfig, read_config


@dataclass(frozen=True, slots=True)
class Published:
    """A config the supervisor checked, as it publishes it to the workers."""

    generation: int
    path: Path
    text: bytes

    def loaded(self) -> LoadedConfig:
        """The published text parsed, with the environment beside the config file."""
        return read_config(self.path, self.text)


class WorkerConfigs:
    """The supervisor's published config and the workers' acknowledgements, in one folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder / "config"
        self._published = self.folder / "published.json"

    def publish(self, generation: int, loaded: LoadedConfig) -> None:
        """Publish ``loaded`` as ``generation`` (atomically: a worker reads all of it or none)."""
        self.folder.mkdir(mode=0o700, exist_ok=True)
        data = {"generation": generation, "path": str(loaded.path), "text": loaded.text.decode()}
        _replace(self._published, orjson.dumps(data))

    def published(self) -> Published:
        """The config the supervisor published last."""
        data = orjson.loads(self._published.read_bytes())
        return Published(data["generation"], Path(data["path"]), data["text"].encode())

    def acknowledge(self, pid: int, generation: int, error: str | None) -> None:
        """Say which generation worker ``pid`` serves now, or why it could not load the newest."""
        data = {"generation": generation, "error": error}
        _replace(self.folder / f"ack-{pid}.json", orjson.dumps(data))

    def acknowledged(self, pid: int) -> tuple[int, str | None]:
        """Worker ``pid``'s generation and error (``(0, None)`` before it said anything)."""
        try:
            data = orjson.loads((self.folder / f"ack-{pid}.json").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return 0, None
        return int(data["generation"]), data["error"]


def _replace(path: Path, data: bytes) -> None:
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_bytes(data)
    temp.replace(path)
