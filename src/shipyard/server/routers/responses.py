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
    else:
        data = b"[" + b",".join(item.model_dump_json().encode() for item in body) + b"]"
    return Response(data, status_code=status_code, media_type="application/json")
