"""The store of an S3 bucket (any S3-compatible endpoint: AWS, MinIO, Ceph, SeaweedFS, GCS's
S3 interoperability), on boto3, imported only when such a store is opened.

Files go up with boto3's managed transfer (multipart above 8 MiB, parts in parallel); the
checkpoint layer puts several files at once (``parallel_puts``) and copies a file it has
already stored server-side (``copy``), so an unchanged file is never sent again. Every
failure of the service is an OSError (StoreError), as a file system's would be.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from shipyard.common.errors import InvalidRequest
from shipyard.storage.store import Store


class StoreError(OSError):
    """The object store refused or could not be reached; the message says which and why,
    and ``field`` the config field at fault when one is (bucket, access_key, endpoint_url)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class S3Location:
    """Determined's fields: where the bucket is and who may use it. Credentials left None
    come from boto3's usual chain (AWS_* variables, ~/.aws, an instance role)."""

    bucket: str
    prefix: str = ""
    endpoint_url: str | None = None
    region: str | None = None
    access_key: str | None = None
    secret_key: str | None = None

    def url(self) -> str:
        path = "/".join(p for p in (self.bucket, self.prefix.strip("/")) if p)
        return f"s3://{path}"


def _boto3() -> Any:
    try:
        import boto3
    except ImportError:
        raise InvalidRequest(
            "checkpoint storage of type s3 needs boto3: pip install 'shipyard[s3]'"
        ) from None
    return boto3


class S3Store(Store):
    # Files put at once by the checkpoint layer; each big one also sends parts in parallel.
    parallel_puts = 8
    copies_inside = True

    def __init__(self, where: S3Location, *, connect_timeout: float = 10, retries: int = 4):
        boto3 = _boto3()
        from boto3.s3.transfer import TransferConfig, create_transfer_manager
        from botocore.config import Config

        self.where = where
        self._prefix = where.prefix.strip("/")
        config = Config(
            connect_timeout=connect_timeout,
            read_timeout=60,
            retries={"max_attempts": retries, "mode": "standard"},
            max_pool_connections=self.parallel_puts * 10 + 4,
        )
        self._client = boto3.session.Session().client(
            "s3",
            endpoint_url=where.endpoint_url,
            region_name=where.region or "us-east-1",
            aws_access_key_id=where.access_key,
            aws_secret_access_key=where.secret_key,
            config=config,
        )
        self._transfer = TransferConfig()  # boto3's defaults: 8 MiB parts, 10 threads
        # One transfer manager for every put of this store: the parts of all the files the
        # checkpoint layer puts at once share its 10 threads, as one boto3 upload's do (a
        # manager per file would put 10 requests per file in flight and slow all of them).
        self._uploads = create_transfer_manager(self._client, self._transfer)

    def __str__(self) -> str:
        return self.where.url()

    def _key(self, key: str) -> str:
        return f"{self._prefix}/{key}" if self._prefix else key

    def _relative(self, full: str) -> str:
        return full[len(self._prefix) + 1 :] if self._prefix else full

    def put(self, key: str, source: bytes | Path, *, durable: bool = True) -> None:
        with _errors(f"cannot put {key} into {self}"):
            if isinstance(source, bytes):
                self._client.put_object(Bucket=self.where.bucket, Key=self._key(key), Body=source)
            else:
                self._uploads.upload(str(source), self.where.bucket, self._key(key)).result()

    def copy(self, source_key: str, key: str) -> None:
        """Copy a stored file inside the bucket (no byte leaves the service);
        FileNotFoundError when the source is gone."""
        with _errors(f"cannot copy {source_key} to {key} in {self}"):
            self._client.copy(
                {"Bucket": self.where.bucket, "Key": self._key(source_key)},
                self.where.bucket,
                self._key(key),
                Config=self._transfer,
            )

    def get(self, key: str) -> BinaryIO:
        with _errors(f"cannot read {key} from {self}"):
            answer = self._client.get_object(Bucket=self.where.bucket, Key=self._key(key))
        body: BinaryIO = answer["Body"]  # a stream with read() and close()
        return body

    def list(self, prefix: str) -> dict[str, int]:
        start = self._key(f"{prefix}/") if prefix else (f"{self._prefix}/" if self._prefix else "")
        found: dict[str, int] = {}
        with _errors(f"cannot list {prefix or 'the files'} in {self}"):
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.where.bucket, Prefix=start
            )
            for page in pages:
                for item in page.get("Contents", ()):
                    found[self._relative(item["Key"])] = item["Size"]
        return dict(sorted(found.items()))

    def delete(self, prefix: str) -> None:
        self._abort_uploads(prefix)
        keys = [self._key(prefix), *(self._key(k) for k in self.list(prefix))]
        with _errors(f"cannot delete {prefix} in {self}"):
            for start in range(0, len(keys), 1000):  # S3's limit per request
                batch = [{"Key": k} for k in keys[start : start + 1000]]
                answer = self._client.delete_objects(
                    Bucket=self.where.bucket, Delete={"Objects": batch, "Quiet": True}
                )
                if answer.get("Errors"):
                    first = answer["Errors"][0]
                    raise StoreError(
                        f"cannot delete {first.get('Key')} in {self}: {first.get('Message')}"
                    )

    def _abort_uploads(self, prefix: str) -> None:
        """Abort the multipart uploads under ``prefix/`` that a killed writer left: their
        parts are stored (and billed) but listed nowhere else."""
        with _errors(f"cannot list the unfinished uploads of {prefix} in {self}"):
            pages = self._client.get_paginator("list_multipart_uploads").paginate(
                Bucket=self.where.bucket, Prefix=self._key(f"{prefix}/")
            )
            for page in pages:
                for upload in page.get("Uploads", ()):
                    self._client.abort_multipart_upload(
                        Bucket=self.where.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                    )

    def exists(self, key: str) -> bool:
        try:
            with _errors(f"cannot look up {key} in {self}"):
                self._client.head_object(Bucket=self.where.bucket, Key=self._key(key))
        except FileNotFoundError:
            return False
        return True

    def presigned_url(self, key: str, expires_s: int) -> str | None:
        with _errors(f"cannot sign a URL for {key} in {self}"):
            url: str = self._client.generate_presigned_url(
                "get_object",
                Params={"Bucket": self.where.bucket, "Key": self._key(key)},
                ExpiresIn=expires_s,
            )
        return url

    def check_access(self) -> None:
        """Raise StoreError naming what is wrong (no such bucket, refused credentials, an
        endpoint that does not answer) unless this store can list its bucket."""
        with _errors(f"cannot use bucket {self.where.bucket!r}", key_missing=False):
            self._client.list_objects_v2(Bucket=self.where.bucket, Prefix=self._key(""), MaxKeys=1)


@contextlib.contextmanager
def _errors(doing: str, *, key_missing: bool = True) -> Iterator[None]:
    """Turns boto's exceptions into OSErrors: FileNotFoundError for a missing key (when a
    404 means one, not a missing bucket), StoreError with the service's reason otherwise."""
    from boto3.exceptions import Boto3Error
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectionError,
        ConnectTimeoutError,
        NoCredentialsError,
    )

    try:
        yield
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        if code in ("NoSuchKey", "404", "NotFound") and key_missing:
            raise FileNotFoundError(f"{doing}: not found") from None
        field, reason = _REASONS.get(code) or (None, f"{code}: {error.get('Message') or 'refused'}")
        raise StoreError(f"{doing}: {reason}", field) from None
    except NoCredentialsError as exc:
        raise StoreError(f"{doing}: {exc}", "access_key") from None
    except (ConnectionError, ConnectTimeoutError) as exc:  # botocore's: no answer
        raise StoreError(f"{doing}: {exc}", "endpoint_url") from None
    except (BotoCoreError, Boto3Error) as exc:  # Boto3Error: a managed upload's failure
        raise StoreError(f"{doing}: {exc}") from None


# The service's error code -> (the config field at fault, what to tell the user).
_REASONS = {
    "NoSuchBucket": ("bucket", "the bucket does not exist"),
    "404": ("bucket", "the bucket does not exist"),
    "AccessDenied": ("access_key", "access denied: check access_key and secret_key"),
    "403": ("access_key", "access denied: check access_key and secret_key"),
    "InvalidAccessKeyId": ("access_key", "the access_key is not known to the service"),
    "SignatureDoesNotMatch": ("access_key", "the secret_key does not match the access_key"),
}
