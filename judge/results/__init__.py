"""A results folder: its files and how they are read (`files`), what judging adds to its binding (`binding`), and
run.json's registered part (`runinfo`). Above judging (a folder is read with its blinded order), below the numbers."""
