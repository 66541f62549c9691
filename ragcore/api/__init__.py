"""The REST API for integrations (`python -m ragcore api`): FastAPI over the product's services.

The public face is `create_app(settings, *, db=None, embedder=None, generator=None)`; the
package is imported only by the `api` command and the tests, so nothing else pays for FastAPI.
"""

from ragcore.api.app import HEADER_READ_LIMIT, MAX_HEADER_BYTES, create_app

__all__ = ["HEADER_READ_LIMIT", "MAX_HEADER_BYTES", "create_app"]
