"""The explorer's API: one route per record of app/endpoints.py's EXPLORER (tokens, the trace, one attention layer,
activations, positional encodings, predictions, the models), each parsed by its request model and answered by one
service call."""

from __future__ import annotations

from fastapi import APIRouter

from app.endpoints import EXPLORER
from app.routers import add_routes

router = APIRouter()
add_routes(router, EXPLORER)
