"""The commands' top: the pipeline `python -m judge run` executes, on top of every other package."""
