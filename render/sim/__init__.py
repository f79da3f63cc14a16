"""The simulation of a preset: built from its groups, keyframed, stepped along its course of frames and stops, checkpointed exactly."""
