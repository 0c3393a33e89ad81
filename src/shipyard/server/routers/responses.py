"""Answers built from our own pydantic models, serialized once.

A route that returns a model has FastAPI validate it again against its response_model
before serializing it: for a table of hundreds of trials that doubled the cost of the
request. The routes keep response_model, which documents the answer in the OpenAPI schema.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import Response
from pydantic import BaseModel


def json_response(body: BaseModel | Sequence[BaseModel], status_code: int = 200) -> Response:
    if isinstance(body, BaseModel):
        data = body.model_dump_json().encode()
        return Response(data, status_code=status_code, media_type="application/json")
    return json_list_response([item.model_dump_json().encode() for item in body], status_code)


def json_bytes_response(data: bytes, status_code: int = 200) -> Response:
    """An answer already serialized."""
    return Response(data, status_code=status_code, media_type="application/json")


def json_list_response(items: Sequence[bytes], status_code: int = 200) -> Response:
    """A JSON list of items each already serialized (e.g. kept from an earlier answer)."""
    data = b"[" + b",".join(items) + b"]"
    return Response(data, status_code=status_code, media_type="application/json")
