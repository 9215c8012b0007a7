"""Many trainer runs and what is fitted to them: the scaling ladder (and, next, the mixture search)."""
