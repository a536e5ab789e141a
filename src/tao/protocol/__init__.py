"""How a model's text becomes an action: labels, parsing, prompts, grammars."""
