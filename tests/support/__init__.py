"""Test support: peers and helpers the tests (and one benchmark) use, never the product."""
