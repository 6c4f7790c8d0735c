"""Model backends, one file each, behind `base.Backend`."""
from .base import Backend, Generation, Reply, Request

__all__ = ["Backend", "Generation", "Reply", "Request"]
