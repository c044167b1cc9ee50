"""The procedure catalog: the single source of truth for every procedure of the API."""

from edge.catalog.model import Procedure
from edge.catalog.registry import Catalog, build_catalog

__all__ = ["Catalog", "Procedure", "build_catalog"]
