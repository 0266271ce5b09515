"""Phone-profile replay: device cost profiles, event-driven replay, budget selection, oracle."""
