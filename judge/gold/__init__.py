"""Gold: the scores the judge is measured against (`sources`), people's labels files (`labels`), the blind labelling
terminal (`labelling`) and what a label draw buys (`label_power`). Above the numbers, which they are fed to."""
