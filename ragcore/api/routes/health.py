"""GET /v1/health: is the database reachable? No authentication, nothing secret.

For load balancers and compose health checks: 200 `{"status": "ok", "database": true}` or
503 with `false`. It names no version, host, model or error text (an anonymous caller may
ask); the reason goes to the server log, with any password removed by ragcore.db.
"""

from __future__ import annotations

import logging

import psycopg
from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ragcore.api.deps import Context
from ragcore.api.schemas import Health
from ragcore.store import DatabaseError

log = logging.getLogger(__name__)
router = APIRouter(tags=["health"])


@router.get("/v1/health", response_model=Health, summary="Database reachable? (no authentication)",
            responses={503: {"model": Health}})
def health(context: Context) -> JSONResponse:
    try:
        db = context.database()
        with db.connection() as conn:  # the pool's own recovery (new pool, embedded restart) first
            conn.execute("SELECT 1").fetchone()
    except (psycopg.Error, DatabaseError) as exc:  # DatabaseUnavailable: no connection within checkout_timeout
        log.warning("health: database unreachable: %s: %s", type(exc).__name__, exc)
        return JSONResponse(Health(status="unavailable", database=False).model_dump(), status_code=503)
    return JSONResponse(Health(status="ok", database=True).model_dump())
