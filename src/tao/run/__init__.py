"""The run: the ReAct loop, its driver, and what a step passes through (SPEC L1-L14, R1)."""
