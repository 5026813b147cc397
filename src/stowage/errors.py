"""One error hierarchy for the whole service.

Every failure a client can see is a ``StowageError`` with a stable ``code``
and an HTTP ``status``. The HTTP layer renders them in exactly one place
(``stowage.http.errors``); nothing else turns errors into responses.
Storage providers translate their SDK errors into the neutral ``Storage*``
classes below at their own edge.
"""

from __future__ import annotations

from typing import Any, ClassVar


class StowageError(Exception):
    code: ClassVar[str] = "INTERNAL_ERROR"
    status: ClassVar[int] = 500
    default_message: ClassVar[str] = "internal error"

    def __init__(self, message: str | None = None, **details: Any) -> None:
        self.message = message or self.default_message
        self.details = details
        self.headers: dict[str, str] = {}
        super().__init__(self.message)

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error}


# 400: the request itself is malformed.
class BadRequest(StowageError):
    code, status, default_message = "BAD_REQUEST", 400, "bad request"


class InvalidParameter(BadRequest):
    code, default_message = "INVALID_PARAMETER", "a parameter is not valid"


class InvalidPath(BadRequest):
    code, default_message = "INVALID_PATH", "invalid storage path"


class InvalidRequestPath(BadRequest):
    code = "INVALID_REQUEST_PATH"
    default_message = "the request's path holds a control character (percent-decoded)"


class InvalidBase64(BadRequest):
    code, default_message = "INVALID_BASE64", "body is not valid base64"


class MissingFile(BadRequest):
    code, default_message = "MISSING_FILE", "the request carries no file"


class InvalidPolicyPattern(BadRequest):
    code = "INVALID_POLICY_PATTERN"
    default_message = "a policy pattern is not one RE2 accepts"


class InvalidHeader(BadRequest):
    code, default_message = "INVALID_HEADER", "a request header is not valid"


class InvalidJson(BadRequest):
    code, default_message = "INVALID_JSON", "the body is not valid JSON"


class InvalidEncoding(BadRequest):
    code, default_message = (
        "INVALID_CONTENT_ENCODING",
        "the body does not match its Content-Encoding",
    )


class UnknownApiKey(BadRequest):
    code, default_message = "UNKNOWN_API_KEY", "the key names no app"


class InvalidUrl(BadRequest):
    code, default_message = "INVALID_URL", "the url cannot be fetched"


class BadDigest(BadRequest):
    code, default_message = "BAD_DIGEST", "content does not match the given digest"


class UnsupportedTask(BadRequest):
    code, default_message = "UNSUPPORTED_TASK", "this transformation task is not supported"


class TaskNotAvailable(BadRequest):
    code = "TASK_NOT_AVAILABLE"
    default_message = "this task of the hosted service is not run by this server"


class InvalidParts(BadRequest):
    code, default_message = "INVALID_PARTS", "the upload's parts do not make up the file"


class PartSizeMismatch(BadRequest):
    code, default_message = "PART_SIZE_MISMATCH", "the part is not the size announced for it"


class CdnLinkRefused(BadRequest):
    code = "CDN_LINK_NOT_ACCEPTED"
    default_message = "this operation works only with the API file link, not a CDN link"


# 401/403: authentication and authorisation.
class Unauthenticated(StowageError):
    code, status, default_message = "AUTH_REQUIRED", 401, "credentials are required"


class InvalidSignature(StowageError):
    code, status, default_message = "INVALID_SIGNATURE", 403, "signature does not match the policy"


class InvalidPolicy(StowageError):
    code, status, default_message = "INVALID_POLICY", 403, "policy is malformed"


class PolicyExpired(StowageError):
    code, status, default_message = "POLICY_EXPIRED", 403, "policy has expired"


class PolicyDenied(StowageError):
    code, status, default_message = "POLICY_DENIED", 403, "policy does not allow this request"


class InvalidCredentials(StowageError):
    code, status, default_message = "INVALID_CREDENTIALS", 401, "app secret is wrong"


class ProviderNotEnabled(StowageError):
    code = "PROVIDER_NOT_ENABLED"
    status = 403
    default_message = "this storage provider is not enabled for this app"


class UrlForbidden(StowageError):
    code, status, default_message = "URL_FORBIDDEN", 403, "the url points at a forbidden address"


# 404 and friends.
class HandleNotFound(StowageError):
    code, status, default_message = "HANDLE_NOT_FOUND", 404, "no file with this handle"


class UploadNotFound(StowageError):
    code, status, default_message = "UPLOAD_NOT_FOUND", 404, "no open upload with this id"


class NotFound(StowageError):
    code, status, default_message = "NOT_FOUND", 404, "no such resource"


class MethodNotAllowed(StowageError):
    code, status, default_message = "METHOD_NOT_ALLOWED", 405, "method not allowed here"


class RequestTimeout(StowageError):
    code, status, default_message = "REQUEST_TIMEOUT", 408, "the request body stalled"


class Conflict(StowageError):
    code, status, default_message = "CONFLICT", 409, "conflict with the current state"


class KeyInUse(Conflict):
    code, default_message = "KEY_IN_USE", "another handle already stores a file at this key"


class NotWriteable(Conflict):
    code = "NOT_WRITEABLE"
    default_message = "this handle links to a file the service does not own; it is read-only"


class PreconditionFailed(StowageError):
    code, status, default_message = "PRECONDITION_FAILED", 412, "precondition failed"


class ExpectationFailed(StowageError):
    code = "EXPECTATION_FAILED"
    status = 417
    default_message = "only Expect: 100-continue is understood"


class PayloadTooLarge(StowageError):
    code, status, default_message = "PAYLOAD_TOO_LARGE", 413, "the file is larger than allowed"


class UnsupportedMediaType(StowageError):
    code, status, default_message = "UNSUPPORTED_MEDIA_TYPE", 415, "unsupported content type"


# Refused by the HTTP parser itself (http/protocol.py renders them).
class RequestLineTooLong(BadRequest):
    code, status, default_message = "URI_TOO_LONG", 414, "the request line is too long"


class HeadersTooLarge(BadRequest):
    code, status, default_message = (
        "HEADERS_TOO_LARGE",
        431,
        "a header is too long or there are too many",
    )


class UnsupportedEncoding(UnsupportedMediaType):
    code, default_message = (
        "UNSUPPORTED_CONTENT_ENCODING",
        "Content-Encoding must be gzip, deflate or identity",
    )


class MalformedRequest(BadRequest):
    code, default_message = "MALFORMED_REQUEST", "the request is not valid HTTP/1.1"


class NotAnImage(UnsupportedMediaType):
    code, default_message = "NOT_AN_IMAGE", "the file is not an image this service can transform"


class NotAPdf(UnsupportedMediaType):
    code, default_message = "NOT_A_PDF", "the task takes a PDF"


class UnsupportedConversion(BadRequest):
    code, default_message = "UNSUPPORTED_CONVERSION", "the file cannot be converted to that format"


class DocumentsUnavailable(UnsupportedMediaType):
    code, default_message = (
        "DOCUMENTS_UNAVAILABLE",
        "this node converts no Office documents (office_converters is 0 or LibreOffice is "
        "not installed)",
    )


class RangeNotSatisfiable(StowageError):
    code, status, default_message = "RANGE_NOT_SATISFIABLE", 416, "range not satisfiable"


class Unprocessable(StowageError):
    code, status, default_message = "UNPROCESSABLE", 422, "the file cannot be processed"


class ImageTooLarge(Unprocessable):
    code, default_message = "IMAGE_TOO_LARGE", "the image is larger than the processing limits"


class InvalidImage(Unprocessable):
    code, default_message = "INVALID_IMAGE", "the image is truncated or corrupt"


class InvalidDocument(Unprocessable):
    code, default_message = "INVALID_DOCUMENT", "the document is truncated or corrupt"


class DocumentTooLarge(Unprocessable):
    code, default_message = "DOCUMENT_TOO_LARGE", "the document has more pages than allowed"


class ProcessingTimeout(Unprocessable):
    code, default_message = "PROCESSING_TIMEOUT", "the transformation took longer than allowed"


class ProcessingTooCostly(Unprocessable):
    code = "PROCESSING_TOO_COSTLY"
    default_message = "the transformation would take more work than allowed"


class PayloadTooSmall(Unprocessable):
    code, default_message = "PAYLOAD_TOO_SMALL", "the file is smaller than the policy allows"


class RateLimited(StowageError):
    code, status, default_message = "RATE_LIMITED", 429, "too many requests"


class NotSupported(StowageError):
    code, status, default_message = "NOT_SUPPORTED", 501, "not supported"


class CloudDriveUnavailable(BadRequest):
    """400, as TASK_NOT_AVAILABLE: the same answer on every retry, and no client input
    may be answered with a 5xx (clients and CDNs retry and alert on those)."""

    code, default_message = "CLOUD_DRIVE_UNAVAILABLE", "cloud drives are not connected"


# Upstream and storage failures: neutral errors that every provider maps its SDK errors to.
class UpstreamError(StowageError):
    code, status, default_message = "UPSTREAM_ERROR", 502, "the url source failed"


class UpstreamTimeout(StowageError):
    code, status, default_message = "UPSTREAM_TIMEOUT", 504, "the url source timed out"


class StorageError(StowageError):
    code, status, default_message = "STORAGE_ERROR", 502, "the storage backend failed"


class StorageNotFound(StorageError):
    code, status, default_message = "STORAGE_OBJECT_NOT_FOUND", 404, "object missing in storage"


class StorageAccessDenied(StorageError):
    code, status, default_message = "STORAGE_ACCESS_DENIED", 403, "storage refused access"


class StorageUnavailable(StorageError):
    code, status, default_message = "STORAGE_UNAVAILABLE", 503, "storage is unavailable"


class StorageConflict(StorageError):
    code, status, default_message = "STORAGE_CONFLICT", 409, "storage reported a conflict"


class StorageVersionChanged(StorageError):
    """A read pinned to one version of an object found another there (an overwrite committed
    meanwhile). Readers retry with the new version; a client sees it only when they gave up."""

    code, status = "STORAGE_VERSION_CHANGED", 503
    default_message = "the file kept changing while it was read; try again"


class StorageFull(StorageError):
    code, status, default_message = "STORAGE_FULL", 507, "storage is full"


class StorageMisconfigured(StorageError):
    code, status, default_message = "STORAGE_MISCONFIGURED", 503, "storage is misconfigured"


class ClientGone(StowageError):
    """The client closed its connection while its URL source was fetched or drawn: the
    work is stopped, and nothing is sent (the code is nginx's for the same)."""

    code, status, default_message = "CLIENT_CLOSED_REQUEST", 499, "the client went away"


class ProcessingBusy(StowageError):
    code, status, default_message = "PROCESSING_BUSY", 503, "too many transformations at once"


class FetchBusy(StowageError):
    """No URL fetch slot came free within ``fetch_slot_wait`` seconds, or the app's fetches
    already hold as many as one app may (``fetch_app_max_concurrent``); ``Retry-After`` says when to
    try again."""

    code, status, default_message = "FETCH_BUSY", 503, "too many url fetches at once"


class ShuttingDown(StowageError):
    code, status, default_message = "SHUTTING_DOWN", 503, "this node is shutting down"


class OriginUnavailable(StowageError):
    """Answered by the edge cache (deploy/varnish/stowage.vcl), never by a node: the CDN
    origin behind it did not answer."""

    code, status, default_message = "ORIGIN_UNAVAILABLE", 503, "the CDN origin did not answer"


class EdgeError(StowageError):
    """Answered by the edge cache (deploy/varnish/stowage.vcl), never by a node: the VCL
    failed on a request (Varnish's own ``VCL failed``); not expected with the shipped VCL."""

    code, status, default_message = "EDGE_ERROR", 503, "VCL failed"


class MisdirectedRequest(StowageError):
    """Answered by the shipped nginx files (deploy/cluster/nginx.conf), never by a node: a
    request for a name no server block there serves."""

    code, status, default_message = (
        "MISDIRECTED_REQUEST",
        421,
        "this server does not serve that name",
    )


class PurgeForbidden(StowageError):
    """Answered by the edge cache (deploy/varnish/stowage.vcl), never by a node: a PURGE
    from an address not in the VCL's ``acl purgers``."""

    code, status, default_message = "PURGE_FORBIDDEN", 403, "only the Stowage nodes may purge"


class RegistryUnavailable(StowageError):
    code, status, default_message = "REGISTRY_UNAVAILABLE", 503, "the registry is unavailable"


class SchemaMismatch(RegistryUnavailable):
    code, default_message = "SCHEMA_MISMATCH", "the registry schema is not the one this node knows"


class IntegrityError(StorageError):
    code, status, default_message = "INTEGRITY_ERROR", 500, "stored bytes do not match their hash"


def all_error_classes() -> list[type[StowageError]]:
    """Every concrete error class, for the docs table and its test."""
    seen: list[type[StowageError]] = []
    stack: list[type[StowageError]] = [StowageError]
    while stack:
        cls = stack.pop()
        seen.append(cls)
        stack.extend(cls.__subclasses__())
    return sorted(seen, key=lambda c: (c.status, c.code))
