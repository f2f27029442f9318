"""The memory package: the Cue-Tag-Content graph (the cues stage) and active recall over it."""
