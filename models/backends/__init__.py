"""Model backends, one file each, behind `base.Backend`, each declaring a `base.BackendInfo`; `registry` lists them."""
from .base import Backend, Generation, Reply, Request

__all__ = ["Backend", "Generation", "Reply", "Request"]
