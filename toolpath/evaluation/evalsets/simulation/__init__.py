"""Eval cases with a ``conversation_scenario``: the simulated user, its prompts, and the conversation it plays."""
