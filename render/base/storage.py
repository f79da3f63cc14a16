"""Where a sweep's files go: a local folder, or an fsspec URL (s3://bucket/prefix, gs://...,
memory:// in tests), each file made visible whole or not at all.

A `Store` is one destination folder; its files are named by paths relative to it
("s-0001/s-0001-s1.gif"). Both kinds keep the promise of files.py, that no reader ever sees a
truncated file under a final name:

- `LocalStore` (a path, or a file:// URL) is the local disk as files.py writes it: each file under
  its exclusive temporary name beside its target (.NAME.PID.part), a job's files renamed together
  (commit_together), the same bytes and the same behaviour as before there were stores.
- `ObjectStore` (any other URL, through fsspec) uploads each finished file from a local staging
  file. On an object store where one PUT is atomic (S3 and what speaks its API, GCS, Azure,
  memory://) the file is one PUT of the finished file: the object appears whole when the upload
  completes, never in part (s3fs sends a file under 100 MiB as one put_object and a larger one as
  a multipart upload, which S3 likewise shows only when it completes). Elsewhere (sftp, ...) the
  file is uploaded under a temporary name (.NAME.TOKEN.part) and then moved to its name.

A job's files are several objects, and an object store has no rename of several at once: a
sweep's manifest says a job is done only after all of its files are stored (the manifest is
written last), and a resumed sweep checks each stored file's size and sha256 against the
manifest. A render's files are stored by `ObjectStore.put_together`: the earlier objects of their
names copied aside first, and put back where an upload fails or a signal stops it, so that a
failed or stopped upload leaves the store as it was (render/commands/render.py).

Before a render or a sweep writes anything it probes its store (`Store.probe`, called by
render/commands/render.py and render/commands/sweep.py before torch is loaded): an empty hidden
object written and removed under the prefix, so that no credentials, a missing bucket, a refused
connection, a bad endpoint or no right to write is one message before minutes of work, not after.

A sweep's lock object (render/sweep/lock.py) is written by conditional requests:
`ObjectStore.create_bytes` (only where no object is), `replace_bytes` and `remove_if` (only where
the object is still of the version read), each one atomic request on S3 (If-None-Match, If-Match),
a check and then a write elsewhere.

Credentials come only from the environment and fsspec's own configuration (for S3: the AWS
variables, ~/.aws, FSSPEC_S3_* or AWS_ENDPOINT_URL_S3 for an S3-compatible server); a URL that
carries them (user:secret@, a query) is refused, so that no credential reaches a manifest,
sidecar, message or log. fsspec and the S3 driver are the optional extra `cloud`
(pip install 'physarum[cloud]'), imported at first use.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO
from urllib.parse import urlsplit

from .errors import RenderError, name_file
from .files import PartialFile, commit_together, written_whole

SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")
# a URL that pathlib.Path collapsed ('s3://b/p' -> 's3:/b/p'): a scheme of two characters or more
COLLAPSED = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/(?!/)")
# object stores where one PUT is atomic: an object appears whole or not at all
ATOMIC_PUT = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "memory"})
# object stores whose URL's first part is a bucket (or container) that must exist before any object
BUCKETED = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss"})
READ_CHUNK = 1 << 20
# what a failed or interrupted ObjectStore.put_together says of the store
PUT_BACK = "the files stored before it were put back: the store holds what it held before"
# the empty hidden object ObjectStore.probe writes and removes: PROBE + a random token
PROBE = ".physarum-probe."
# the probe of an S3 store, bounded: two attempts, 5 s to connect, 10 s to read (botocore's
# defaults are 5 attempts with backoff, 60 s each: 9 s for a refused connection, minutes for a
# host that never answers); s3fs's own retries of a timeout are one attempt (its default 5)
S3_PROBE = {
    "connect_timeout": 5,
    "read_timeout": 10,
    "retries": {"total_max_attempts": 2, "mode": "standard"},
}


def is_url(destination) -> bool:
    """Whether `destination` (a str) is a URL with a scheme (s3://...), not a local path."""
    return isinstance(destination, str) and SCHEME.match(destination) is not None


def restored(destination: str | Path) -> str | Path:
    """`destination` with a URL that pathlib collapsed put back (Path('s3://b/p') is 's3:/b/p'),
    where its scheme is one fsspec knows; anything else as it is."""
    if not isinstance(destination, Path):
        return destination
    text = str(destination)
    match = COLLAPSED.match(text)
    if match is None or not _known_protocol(match.group(1)):
        return destination
    scheme, rest = match.group(1), text[match.end() :]
    return f"{scheme}:///{rest}" if scheme.lower() in ("file", "local") else f"{scheme}://{rest}"


def _known_protocol(scheme: str) -> bool:
    try:
        import fsspec  # start-up: fsspec, where a destination looks like a URL
    except ImportError:
        return scheme.lower() in ATOMIC_PUT | {"file"}
    return scheme.lower() in fsspec.available_protocols()


def check_url(url: str) -> None:
    """RenderError where a URL carries credentials or a query: they come from the environment."""
    parts = urlsplit(url)
    if "@" in parts.netloc or parts.query or parts.fragment:
        raise RenderError(
            f"--out {_redacted(url)}: a URL may not carry credentials or options (user@, ?, #): "
            "give them in the environment (AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL_S3, ...) or fsspec's "
            "configuration, so that no output, manifest or message holds them"
        )


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return f"{parts.scheme}://{host}{parts.path}"


def open_store(destination: str | Path) -> Store:
    """The store of a destination folder: a LocalStore for a path or file:// URL, else an
    ObjectStore through fsspec (RenderError where fsspec or the protocol's driver is missing)."""
    destination = restored(destination)
    if not is_url(destination):
        return LocalStore(Path(destination))
    check_url(destination)
    scheme = SCHEME.match(destination).group(1).lower()
    if scheme in ("file", "local"):
        return LocalStore(Path(file_url_path(destination)))
    try:
        import fsspec  # start-up: fsspec, for a sweep into object storage
    except ImportError:
        raise RenderError(
            f"--out {destination}: object storage needs fsspec: pip install 'physarum[cloud]'"
        ) from None
    try:
        fs, root = fsspec.core.url_to_fs(destination)
    except (ImportError, ValueError) as error:
        raise RenderError(
            f"--out {destination}: {error} (S3 needs s3fs: pip install 'physarum[cloud]')"
        ) from None
    return ObjectStore(destination.rstrip("/"), fs, root.rstrip("/"), scheme)


def file_url_path(url: str) -> str:
    """The local path of a file:// URL; RenderError where it names a host (file://out/x is the
    path /x on the host 'out', not the folder out/x): only file:///PATH or file://localhost/PATH."""
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost") or not parts.path:
        host = f"; {parts.netloc!r} would be a host, not a folder" if parts.netloc else ""
        raise RenderError(
            f"--out {url}: a file URL is file:///ABSOLUTE/PATH (three slashes{host}): give "
            "file:///... or a plain path such as outputs/x"
        )
    return parts.path


class Location(str):
    """A store's URL that joins like a Path (`location / 'manifest.jsonl'`) and has a `name`, so
    that what prints a sweep's folder prints a URL the same way."""

    def __truediv__(self, other) -> Location:
        return Location(f"{self.rstrip('/')}/{other}")

    @property
    def name(self) -> str:
        return PurePosixPath(urlsplit(self).path).name or urlsplit(self).netloc


def check_relative(rel: str) -> str:
    """A file's path inside a store: relative, '/'-separated, no '..' (ValueError otherwise)."""
    parts = PurePosixPath(rel).parts
    if not rel or rel.startswith("/") or "\\" in rel or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{rel!r} is no path inside the store")
    return rel


class Staged:
    """One file on its way into a store: written at `path` (a local file, opened exclusively by
    `open()`), made visible at `rel` by Store.commit."""

    def __init__(self, rel: str, path: Path, partial: PartialFile | None = None):
        self.rel, self.path, self.partial = rel, path, partial

    def open(self) -> IO[bytes]:
        """The local file to write the bytes into (created exclusively where it is a PartialFile)."""
        if self.partial is not None:
            return os.fdopen(self.partial.create(), "wb")
        return open(self.path, "xb")

    def discard(self) -> None:
        if self.partial is not None:
            self.partial.abort()
        else:
            self.path.unlink(missing_ok=True)


class Store:
    """A destination folder (see the module's text); `url` is what messages name, `location`
    what a summary prints."""

    url: str
    location: Path | Location
    local: bool

    def probe(self, reading: bool = False) -> None:
        """RenderError where this store cannot take a file (or, `reading`, cannot be read), before
        anything is rendered or read (a local folder: nothing to ask; files.py names the file its
        disk refuses)."""

    def stage(self, rel: str) -> Staged:
        raise NotImplementedError

    def commit(self, staged: Sequence[Staged]) -> None:
        """Make every staged file visible under its name (see the module's text)."""
        raise NotImplementedError

    def put_file(self, source: Path, rel: str) -> None:
        """A local file's bytes stored whole at `rel` (copied; the source is left)."""
        staged = self.stage(rel)
        try:
            with staged.open() as target, open(source, "rb") as file:
                shutil.copyfileobj(file, target, READ_CHUNK)
            self.commit([staged])
        except BaseException:
            staged.discard()
            raise

    def write_bytes(self, rel: str, data: bytes) -> None:
        raise NotImplementedError

    def open_read(self, rel: str) -> IO[bytes]:
        raise NotImplementedError

    def size(self, rel: str) -> int | None:
        """The stored file's size, or None where there is no file at `rel`."""
        raise NotImplementedError

    def read_bytes(self, rel: str, limit: int) -> bytes:
        """The stored file, at most `limit` bytes (ValueError beyond; OSError where missing)."""
        with self.open_read(rel) as file:
            data = file.read(limit + 1)
        if len(data) > limit:
            raise ValueError(f"{self.url}/{rel} is larger than {limit} bytes")
        return data

    def sha256(self, rel: str) -> str:
        digest = hashlib.sha256()
        with self.open_read(rel) as file:
            while block := file.read(READ_CHUNK):
                digest.update(block)
        return digest.hexdigest()

    def whole(self, rel: str, size: int, sha256: str) -> bool:
        """Whether the file at `rel` is there with this size and sha256."""
        try:
            return self.size(rel) == size and self.sha256(rel) == sha256
        except (OSError, ValueError):
            return False


class LocalStore(Store):
    """A local folder, written as files.py writes (see the module's text)."""

    local = True

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self.url = str(self.root)
        self.location = self.root

    def path(self, rel: str) -> Path:
        return self.root / check_relative(rel)

    def stage(self, rel: str) -> Staged:
        target = self.path(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = PartialFile(target)
        return Staged(rel, partial.temporary, partial)

    def commit(self, staged: Sequence[Staged]) -> None:
        commit_together([item.partial for item in staged])

    def write_bytes(self, rel: str, data: bytes) -> None:
        target = self.path(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        with written_whole(target) as temporary:
            temporary.write_bytes(data)

    def open_read(self, rel: str) -> IO[bytes]:
        return open(self.path(rel), "rb")

    def size(self, rel: str) -> int | None:
        path = self.path(rel)
        return path.stat().st_size if path.is_file() else None


class ObjectStore(Store):
    """A folder of an fsspec file system (see the module's text). Staging files live in a local
    temporary folder of this process, removed with `close()`."""

    local = False

    def __init__(self, url: str, fs, root: str, scheme: str):
        self.url, self.fs, self.root, self.scheme = url, fs, root, scheme
        self.location = Location(url)
        self.atomic_put = scheme in ATOMIC_PUT
        self._staging: Path | None = None

    def key(self, rel: str) -> str:
        return f"{self.root}/{check_relative(rel)}"

    def staging(self) -> Path:
        if self._staging is None:
            self._staging = Path(tempfile.mkdtemp(prefix="physarum-staging-"))
        return self._staging

    def close(self) -> None:
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)
            self._staging = None

    def probe(self, reading: bool = False) -> None:
        """One RenderError naming the URL and the cause where the store cannot take a file: an
        empty hidden object (.physarum-probe.TOKEN) written under the prefix and removed. Its
        write refused (no credentials, a missing bucket, a refused connection, a bad endpoint, no
        right to write) leaves nothing anywhere. Two requests (a PUT and a DELETE); on S3 bounded
        by S3_PROBE (about 1 s for a refused connection, at most about 21 s for a host that never
        answers). A removal the store refuses (a policy that lets one write, not delete) is no
        error: the empty object stays, hidden. `reading` (a dry run): the store is asked for that
        hidden object's details instead, and writes nothing; the object missing is no error, for
        there is nothing yet to read, but its bucket missing is (missing_bucket: one more request
        where the store has buckets); the same bounds."""
        key = f"{self.root}/{PROBE}{secrets.token_hex(6)}"
        try:
            fs = self._probing_fs()
            if reading:
                try:
                    fs.info(key)
                except FileNotFoundError:
                    self.missing_bucket(fs)
            else:
                fs.pipe_file(key, b"")
        except Exception as error:
            verb, undone = (
                ("a read", "nothing was read") if reading else ("a write", "nothing was rendered or written")
            )
            raise RenderError(
                f"{self.url}: the store refused {verb}, so {undone}: "
                f"{type(error).__name__}: {_reason(error)}; {_store_hint(self.scheme)}"
            ) from None
        if not reading:
            with contextlib.suppress(Exception):  # an empty hidden object left behind is harmless
                fs.rm_file(key)

    def missing_bucket(self, fs) -> None:
        """FileNotFoundError where the store names its folders by bucket (BUCKETED: S3, GCS,
        Azure) and the URL's bucket is not there; a bucket that cannot be asked about (no right
        to list it) is no error: its objects may still be readable."""
        if self.scheme not in BUCKETED:
            return
        bucket = self.root.split("/", 1)[0]
        try:
            fs.info(bucket)
        except FileNotFoundError:
            raise FileNotFoundError(f"the bucket {bucket!r} does not exist") from None
        except Exception:
            return

    def _probing_fs(self):
        """The file system the probe asks: the store's, or for S3 one of the same options
        bounded by S3_PROBE (the store's own keeps the defaults its uploads need)."""
        if self.scheme not in ("s3", "s3a"):
            return self.fs
        options = dict(self.fs.storage_options)
        options["config_kwargs"] = {**options.get("config_kwargs", {}), **S3_PROBE}
        fs = type(self.fs)(**options, skip_instance_cache=True)
        fs.retries = 1  # s3fs's own retry loop (its default 5) over botocore's attempts
        return fs

    def stage(self, rel: str) -> Staged:
        check_relative(rel)
        return Staged(rel, self.staging() / f"{secrets.token_hex(8)}-{PurePosixPath(rel).name}")

    def commit(self, staged: Sequence[Staged]) -> None:
        try:
            for item in staged:
                self._upload(item.path, item.rel)
        finally:
            for item in staged:
                item.discard()

    def put_file(self, source: Path, rel: str) -> None:
        self._upload(Path(source), rel)

    def put_together(
        self, files: Sequence[tuple[Path, str]], stop: Callable[[], None] = lambda: None
    ) -> None:
        """Local files stored at their `rel`s, in order, as one commit as far as an object store
        allows: each earlier object at a `rel` is first copied (server side) to a hidden name beside
        it (.NAME.TOKEN.earlier) and stays readable under its name until its own upload replaces
        it. `stop()` is called before each upload and after the last (a deferred signal raises
        there, base/interrupts.signals_deferred). Where an upload fails or `stop()` raises, every
        object stored so far gets its earlier bytes back (or is removed where there was none)
        and the error is raised: the store holds what it held before. The copies are removed."""
        kept: list[tuple[str, str | None]] = []  # (rel, its earlier object's copy) in upload order
        self.forget_listings()  # whether an earlier object is there: asked of the store, not a cache
        try:
            for source, rel in files:
                stop()
                kept.append((rel, self._keep_earlier(rel)))
                self._upload(Path(source), rel)
            stop()
        except RenderError as error:
            self._put_back(kept, error)
            raise RenderError(f"{error}; {PUT_BACK}") from None
        except BaseException as error:
            self._put_back(kept, error)
            raise
        for _, earlier in kept:
            if earlier is not None:
                with contextlib.suppress(Exception):  # a copy left behind is hidden and harmless
                    self.fs.rm_file(earlier)

    def _keep_earlier(self, rel: str) -> str | None:
        """A hidden copy of the object at `rel` (its key), or None where there is none."""
        if self.size(rel) is None:
            return None
        key = self.key(rel)
        earlier = f"{key.rsplit('/', 1)[0]}/.{PurePosixPath(rel).name}.{secrets.token_hex(6)}.earlier"
        with self.refusals(rel, reading=True):
            self.fs.copy(key, earlier)
        return earlier

    def _put_back(self, kept: list[tuple[str, str | None]], cause: BaseException) -> None:
        """The objects stored so far given their earlier bytes back (removed where there were
        none), the last first; RenderError naming what could not be, and where its copy is."""
        lost = []
        for rel, earlier in reversed(kept):
            key = self.key(rel)
            try:
                if earlier is not None:
                    self.fs.mv(earlier, key)
                elif self.fs.exists(key):
                    self.fs.rm_file(key)
            except Exception as error:
                copy = (
                    f" (its earlier bytes are at {self.url}/{earlier[len(self.root) + 1 :]})"
                    if earlier
                    else ""
                )
                lost.append(f"{self.url}/{rel}{copy}: {_reason(error)}")
        if lost:
            raise RenderError(f"{_reason(cause)}; and could not put back " + "; ".join(lost)) from None

    def _upload(self, source: Path, rel: str) -> None:
        key = self.key(rel)
        with self.refusals(rel):
            if self.atomic_put:  # one PUT (or a multipart upload): visible only when complete
                self.fs.put_file(str(source), key)
            else:
                hidden = f"{key.rsplit('/', 1)[0]}/.{PurePosixPath(rel).name}.{secrets.token_hex(6)}.part"
                self.fs.put_file(str(source), hidden)
                try:
                    self.fs.mv(hidden, key)
                except BaseException:
                    self.fs.rm_file(hidden)
                    raise

    def write_bytes(self, rel: str, data: bytes) -> None:
        if self.atomic_put:
            with self.refusals(rel):
                self.fs.pipe_file(self.key(rel), data)
            return
        staged = self.stage(rel)
        try:
            staged.path.write_bytes(data)
            self.commit([staged])
        finally:
            staged.discard()

    def create_bytes(self, rel: str, data: bytes) -> str | None:
        """`data` stored at `rel` only where no object is there: the new object's version (see
        read_versioned), or None where one is there. On S3 one conditional PUT (If-None-Match),
        atomic; elsewhere fsspec's own (memory://: atomic within its process; other file systems,
        and drivers without the mode: a check, then a write). RenderError where the store refuses."""
        key = self.key(rel)
        with self.refusals(rel):
            try:
                answer = self.fs.pipe_file(key, data, mode="create")
            except FileExistsError:
                return None
            except (TypeError, NotImplementedError):  # a driver without the mode: check, then write
                if self.fs.exists(key):
                    return None
                answer = self.fs.pipe_file(key, data)
        return _version(answer, data)

    def read_versioned(self, rel: str, limit: int) -> tuple[bytes, str] | None:
        """The object at `rel` (at most `limit` bytes: ValueError beyond) and its version, or None
        where there is none. The version is S3's ETag (asked before the bytes are read: where the
        object changes between, a conditional request with it is refused), elsewhere the bytes'
        sha256."""
        self.forget_listings()
        with self.refusals(rel, reading=True):
            try:
                info = self.fs.info(self.key(rel))
                data = self.fs.cat_file(self.key(rel)) if int(info.get("size", 0)) <= limit else None
            except FileNotFoundError:
                return None
        if data is None or len(data) > limit:
            raise ValueError(f"{self.url}/{rel} is larger than {limit} bytes")
        etag = info.get("ETag") if self._conditional else None
        return data, etag or _version(None, data)

    def replace_bytes(self, rel: str, data: bytes, version: str) -> str | None:
        """`data` stored at `rel` only where the object there is still of `version`: its new
        version, or None where it changed or went. On S3 one conditional PUT (If-Match), atomic;
        elsewhere a read, a comparison, then a write."""
        if not self._conditional:
            now = self.read_versioned(rel, len(data) + READ_CHUNK)
            if now is None or now[1] != version:
                return None
            self.write_bytes(rel, data)
            return _version(None, data)
        bucket, key, _ = self.fs.split_path(self.key(rel))
        with self.refusals(rel):
            try:
                answer = self.fs.call_s3("put_object", Bucket=bucket, Key=key, Body=data, IfMatch=version)
            except Exception as error:
                if _precondition_failed(error):
                    return None
                raise
        self.forget_listings()
        return _version(answer, data)

    def remove_if(self, rel: str, version: str) -> bool:
        """The object at `rel` removed only where it is still of `version`: whether it was. On
        S3 one conditional DELETE (If-Match), atomic; elsewhere a read, a comparison, a removal."""
        if not self._conditional:
            now = self.read_versioned(rel, READ_CHUNK)
            if now is None or now[1] != version:
                return False
            with self.refusals(rel):
                self.fs.rm_file(self.key(rel))
            return True
        bucket, key, _ = self.fs.split_path(self.key(rel))
        with self.refusals(rel):
            try:
                self.fs.call_s3("delete_object", Bucket=bucket, Key=key, IfMatch=version)
            except Exception as error:
                if _precondition_failed(error):
                    return False
                raise
        self.forget_listings()
        return True

    @property
    def _conditional(self) -> bool:
        """Whether the store takes S3's conditional requests (If-Match) through s3fs."""
        return self.scheme in ("s3", "s3a") and hasattr(self.fs, "call_s3")

    def open_read(self, rel: str) -> IO[bytes]:
        try:
            return self.fs.open(self.key(rel), "rb")
        except FileNotFoundError:
            raise
        except Exception as error:
            raise OSError(f"{self.url}/{rel}: {type(error).__name__}: {error}") from None

    def read_bytes(self, rel: str, limit: int) -> bytes:
        size = self.size(rel)
        if size is None:
            raise FileNotFoundError(f"{self.url}/{rel}")
        if size > limit:
            raise ValueError(f"{self.url}/{rel} is larger than {limit} bytes")
        with self.refusals(rel, reading=True):
            return self.fs.cat_file(self.key(rel))

    def size(self, rel: str) -> int | None:
        try:
            info = self.fs.info(self.key(rel))
        except FileNotFoundError:
            return None
        except Exception as error:
            raise RenderError(f"{self.url}/{rel}: the store refused to read: {_reason(error)}") from None
        return int(info["size"]) if info.get("type", "file") == "file" else None

    def forget_listings(self) -> None:
        """Drop fsspec's cached listings (another process may have written since)."""
        invalidate = getattr(self.fs, "invalidate_cache", None)
        if invalidate is not None:
            invalidate()

    @contextmanager
    def refusals(self, rel: str, reading: bool = False) -> Iterator[None]:
        """Any error of the store as one RenderError naming the URL of the file."""
        try:
            yield
        except RenderError:
            raise
        except Exception as error:
            verb = "read" if reading else "write"
            raise RenderError(f"{self.url}/{rel}: the store refused to {verb} it: {_reason(error)}") from None


def _store_hint(scheme: str) -> str:
    """What to check where a store refused the probe: for S3, the variables it reads."""
    if scheme in ("s3", "s3a"):
        return (
            "check that the bucket exists, the credentials (AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, AWS_PROFILE or ~/.aws) and the endpoint (AWS_ENDPOINT_URL_S3 or "
            "FSSPEC_S3_ENDPOINT_URL for an S3-compatible server)"
        )
    return "check that the bucket exists, and the credentials and endpoint in the environment"


def _version(answer, data: bytes) -> str:
    """An object's version after a write: S3's ETag from its answer, else the bytes' sha256."""
    etag = answer.get("ETag") if isinstance(answer, dict) else None
    return etag if isinstance(etag, str) else "sha256:" + hashlib.sha256(data).hexdigest()


def _precondition_failed(error: BaseException) -> bool:
    """Whether a conditional S3 request was refused for its condition (412, or no such key)."""
    if isinstance(error, FileNotFoundError):
        return True
    response = getattr(error.__cause__, "response", None)
    code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
    return code in ("PreconditionFailed", "412")


def _reason(error: BaseException) -> str:
    """An fsspec or driver error's text, one line."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while block := file.read(READ_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def described(folder: Path, rels: Sequence[str]) -> dict[str, dict]:
    """{rel: {"bytes", "sha256"}} of files under a local folder (what a manifest records)."""
    out = {}
    for rel in rels:
        path = Path(folder) / rel
        try:
            out[rel] = {"bytes": path.stat().st_size, "sha256": sha256_of(path)}
        except OSError as error:
            raise name_file(error, path) from None
    return out


__all__ = [
    "ATOMIC_PUT",
    "Location",
    "LocalStore",
    "ObjectStore",
    "Staged",
    "Store",
    "check_url",
    "described",
    "is_url",
    "open_store",
    "restored",
    "sha256_of",
]
