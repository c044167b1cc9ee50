"""sandbox_net."""
